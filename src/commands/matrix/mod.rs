//! `fsynclab matrix`: one scenario in every combination of configurations, each repeated,
//! and seed 002's table of the result. The experiment, in phases:
//!
//! 1. plan: the scenario, the axes and their values (command line and/or a TOML file),
//!    checked whole before anything runs ([`plan`], [`file`]);
//! 2. `--dry-run` stops here and prints the cells, the runs, and the time and space they take;
//! 3. the matrix is recorded in the results store with its plan, and its runs are made
//!    round-robin, each on a freshly made testbed and recorded as it ends ([`run`]); an
//!    interrupted matrix is continued with `--resume ID`; each run's place is claimed in the
//!    store first, so that processes continuing one matrix share its runs ([`claim`]);
//! 4. the table: one per figure, the best of each row in bold, a marker where a cell differs
//!    significantly from the row's reference column ([`table`]).
//!
//! On a farm the runs are made by a scheduler's tasks instead of this process, each with
//! the hidden `fsynclab cell` ([`cell`]) on its node and into the shared store: a Slurm job array followed
//! to its end ([`farm::slurm`]), or a Kubernetes Indexed Job written for `kubectl` ([`farm::k8s`]);
//! [`placement`] says which engine, which nodes, and whether every node runs the whole matrix.

mod cell;
mod farm;
mod options;
mod placement;
mod run;
mod tables;

use std::time::Duration;

use anyhow::Result;

use crate::cli::{Engine, MatrixArgs};
use crate::error::Usage;
use crate::matrix::{claim, file, plan, table};
use crate::recording::{self, Recording};
use crate::store::{Location, Store};
use crate::units::human_size;
use farm::Farm;
use options::FarmOptions;
use plan::{normalize_key, split_values, Axis, Plan, DEFAULT_REPEAT};
use run::Ended;
use table::StoredMatrix;
use tables::{print_tables, settings_line};

pub(crate) use cell::cell;

pub(crate) fn run(args: &MatrixArgs) -> Result<i32> {
    super::kernel::refuse(&args.target, "matrix")?;
    if let Some(id) = &args.resume {
        return resume(id, args);
    }
    let options = FarmOptions::of(args);
    let engine = placement::engine(&options, None);
    placement::check_options(&options, engine)?;
    let farm = farm_of(engine, &options);
    if let Some(farm) = &farm {
        farm.check_options(None)?;
    }
    let mut plan = plan_of(args)?;
    placement::place(&mut plan, &options, engine, || match &farm {
        Some(farm) => farm.nodes(),
        None => Ok(Vec::new()),
    })?;
    plan.check_size(args.yes)?;
    plan.check()?;
    if args.dry_run {
        let slots = plan.order();
        print!("{}", dry_run(&plan, &slots)?);
        return Ok(0);
    }
    if let Some(farm) = &farm {
        farm.check()?;
    }
    let path = store_path(args)?;
    match &farm {
        Some(farm) => farm.check_store(&path)?,
        None => {
            placement::check_local(&plan)?;
            refuse_without_root(&plan)?;
        }
    }
    let mut store = recording::open_for_writing(&path)?;
    let id = store.create_numbered_matrix(
        &plan.scenario,
        &crate::result::now_rfc3339(),
        &serde_json::to_value(&plan)?,
    )?;
    let slots = plan.order();
    if !args.quiet {
        note!(
            "fsynclab matrix {id}: {} cells x {} = {} runs of {}, recorded in {} (`fsynclab matrix --resume {id}` continues it if it stops)",
            plan.cells().len(),
            plan.repeat,
            slots.len(),
            plan.scenario,
            recording::shown_store(&path)
        );
        if plan.implied_scratch {
            note!(
                "fsynclab matrix {id}: the cells run on a scratch {} (what a device, scheduler, mkfs or kernel axis needs; --scratch FS chooses another)",
                plan::IMPLIED_SCRATCH
            );
        }
    }
    // A warning, not progress: said with --quiet too.
    if plan.mixes_host_and_guests() {
        note!(
            "fsynclab matrix {id}: kernel=host runs on this machine, the other kernels in a VM under {}: their cells differ by how they were booted as well as by kernel; to compare kernels alone, put only installed releases or images on the axis (docs/kernels.md)",
            crate::testbed::vm::accelerator().name()
        );
    }
    run_on(farm.as_deref(), plan, id, &slots, store, path, &options)
}

/// The farm of `engine`; none for the local engine.
fn farm_of(engine: Engine, options: &FarmOptions) -> Option<Box<dyn Farm + '_>> {
    match engine {
        Engine::Local => None,
        Engine::Slurm => Some(Box::new(farm::slurm::Slurm { options })),
        Engine::K8s => Some(Box::new(farm::k8s::Kubernetes { options })),
    }
}

/// Makes the runs of `slots` on `farm`, or here without one, then prints the tables.
fn run_on(
    farm: Option<&dyn Farm>,
    plan: Plan,
    id: String,
    slots: &[(u32, usize)],
    store: Store,
    path: Location,
    options: &FarmOptions,
) -> Result<i32> {
    match farm {
        None => execute_and_print(plan, id, slots, store, path, options),
        Some(farm) => farm.submit(&plan, &id, slots, store, &path),
    }
}

/// `--resume ID`: the runs the matrix still lacks, then its tables. On a farm, only the runs
/// no live task is making are submitted, and claims of tasks that ended are cleared first.
fn resume(id: &str, args: &MatrixArgs) -> Result<i32> {
    let path = store_path(args)?;
    let store = recording::read_store_at(&path)?;
    let stored = StoredMatrix::load(&store, id)?;
    let options = FarmOptions::of(args);
    let engine = placement::engine(&options, Some(&stored.plan));
    placement::check_options(&options, engine)?;
    let farm = farm_of(engine, &options);
    if let Some(farm) = &farm {
        farm.check_options(Some(&stored.plan))?;
    }
    let mut slots = run::remaining(&store, id, &stored.plan)?;
    if args.dry_run {
        print!("{}", dry_run(&stored.plan, &slots)?);
        return Ok(0);
    }
    if slots.is_empty() {
        if !args.quiet {
            note!("fsynclab matrix {id}: every run is made; its table:");
        }
        return print_tables(&store, id, &options.table).map(|()| 0);
    }
    // A farm that hands nothing over now (a Kubernetes matrix resumed without --emit).
    if let Some(why) = farm
        .as_ref()
        .and_then(|f| f.submits_nothing(id, slots.len(), stored.plan.order().len()))
    {
        note!("{why}");
        return print_tables(&store, id, &options.table).map(|()| 0);
    }
    // Tasks of an array still waiting would make their runs again.
    if let Some(farm) = &farm {
        farm.check_none_running(id)?;
    }
    match &farm {
        Some(farm) => farm.check_store(&path)?,
        None => {
            placement::check_local(&stored.plan)?;
            refuse_without_root(&stored.plan)?;
        }
    }
    drop(store);
    let mut store = recording::open_for_writing(&path)?;
    if farm.is_some() {
        store.release_dead_claims(id, claim::is_dead)?;
        let held = store.claims(id)?;
        let cells = stored.plan.cells();
        slots.retain(|(rep, c)| !held.iter().any(|(p, _)| p.repetition == *rep && p.axes == cells[*c]));
        if slots.is_empty() {
            note!("fsynclab matrix {id}: every run left is being made by a task still running; `fsynclab matrix --resume {id}` prints the table once they are stored");
            return Ok(0);
        }
    }
    if !args.quiet {
        note!(
            "fsynclab matrix {id}: {} of {} runs left",
            slots.len(),
            stored.plan.order().len()
        );
    }
    run_on(
        farm.as_deref(),
        stored.plan,
        id.to_string(),
        &slots,
        store,
        path,
        &options,
    )
}

fn execute_and_print(
    plan: Plan,
    id: String,
    slots: &[(u32, usize)],
    store: Store,
    path: Location,
    options: &FarmOptions,
) -> Result<i32> {
    let mut recording = Recording::into(store, path.clone());
    let ended = run::execute(&plan, &id, slots, &mut recording, options.quiet);
    // What this process claimed and did not make is free for the next (a run recorded
    // ends its own claim); a process killed before this is found dead by the next.
    if let Some(store) = recording.store_mut() {
        store.release_claims(&id, &claim::this_process())?;
    }
    match ended? {
        Ended::Interrupted(sig) => {
            note!("fsynclab: matrix {id} stopped by signal {sig}; `fsynclab matrix --resume {id}` makes the runs left");
            Ok(128 + sig)
        }
        Ended::Complete => {
            let store = recording
                .store()
                .ok_or_else(|| anyhow::anyhow!("the matrix's store was closed"))?;
            let elsewhere = run::remaining(store, &id, &plan)?.len();
            if elsewhere > 0 {
                note!("fsynclab matrix {id}: {elsewhere} runs are still being made by another fsynclab; the table shows the runs stored (`fsynclab matrix --resume {id}` prints it whole once they are)");
            }
            print_tables(store, &id, &options.table)?;
            if !options.quiet {
                note!("fsynclab matrix {id}: `fsynclab report --matrix {id} -o {id}.html` draws it; `fsynclab runs --matrix {id}` lists its runs");
            }
            Ok(0)
        }
    }
}

/// The store a matrix is kept in: it must have one.
pub(crate) fn store_path(args: &MatrixArgs) -> Result<crate::store::Location> {
    store_at(args.store.store.as_deref())
}

/// The store `--store` names (or the default), which a matrix cannot do without.
fn store_at(given: Option<&std::path::Path>) -> Result<crate::store::Location> {
    recording::store_path(given, false)?.ok_or_else(|| {
        Usage(format!(
            "a matrix lives in the results store, which {}={} turns off: give --store PATH",
            crate::store::STORE_ENV,
            recording::STORE_OFF
        ))
        .into()
    })
}

pub(crate) fn refuse_without_root(plan: &Plan) -> Result<()> {
    if plan.needs_root() && !crate::sys::is_root() {
        let why = if plan.implied_scratch {
            format!(
                "its cells run on scratch filesystems (a scratch {} is implied by the {} axis)",
                plan::IMPLIED_SCRATCH,
                plan.implying_axis().unwrap_or("device")
            )
        } else {
            "its cells make scratch filesystems or set vm sysctls".to_string()
        };
        return Err(Usage(format!(
            "fsynclab matrix: {why}, which needs root: run it as root (--dry-run shows the plan without)"
        ))
        .into());
    }
    Ok(())
}

/// The plan from the matrix file (if any) and the command line, which adds to it.
fn plan_of(args: &MatrixArgs) -> Result<Plan> {
    let from_file = match &args.file {
        Some(p) => file::read(p)?,
        None => file::MatrixFile::default(),
    };
    let scenario = match (&args.scenario, &from_file.scenario) {
        (Some(a), Some(f)) if a != f => {
            return Err(Usage(format!(
                "the command line names scenario {a}, the matrix file {f}: name one"
            ))
            .into())
        }
        (Some(s), _) | (None, Some(s)) => s.clone(),
        (None, None) => return Err(Usage("name the scenario: fsynclab matrix SCENARIO --axis ...".into()).into()),
    };
    let mut axes = from_file.axes;
    for text in &args.axis {
        let (key, values) = text.split_once('=').ok_or_else(|| {
            Usage(format!(
                "--axis {text}: expected KEY=V1,V2, e.g. --axis device=ram,hdd-7200"
            ))
        })?;
        let key = normalize_key(key);
        let values = split_values(&key, values);
        match axes.iter_mut().find(|a| a.key == key) {
            Some(a) => a.values.extend(values),
            None => axes.push(Axis { key, values }),
        }
    }
    let mut target = from_file.target;
    for (k, v) in args.target.options() {
        target.retain(|(tk, _)| tk != k.name());
        target.push((k.name().to_string(), v));
    }
    let mut sets = from_file.sets;
    sets.extend(args.sets.iter().cloned());
    let mut figures = from_file.figures;
    if !args.figure.is_empty() {
        figures = args.figure.clone();
    }
    let kernel_timeout = axes
        .iter()
        .any(|a| a.key == plan::KERNEL_AXIS)
        .then(|| args.target.kernel_timeout.clone())
        .flatten();
    Ok(Plan {
        scenario,
        sets,
        target,
        axes,
        repeat: args.repeat.or(from_file.repeat).unwrap_or(DEFAULT_REPEAT),
        figures,
        columns: args.columns.clone().or(from_file.columns),
        implied_scratch: false,
        placement: None,
        kernel_timeout,
        origin: None,
    })
}

/// The plan as `--dry-run` prints it: cells, runs, time and space.
fn dry_run(plan: &Plan, slots: &[(u32, usize)]) -> Result<String> {
    let cells = plan.cells();
    let mut out = format!(
        "matrix {}: {} axes, {} cells, {} repetitions: {} runs, round-robin over the cells\n",
        plan.scenario,
        plan.axes.len(),
        cells.len(),
        plan.repeat,
        slots.len()
    );
    for (i, a) in plan.axes.iter().enumerate() {
        out.push_str(&format!(
            "  {}{}: {}\n",
            if i == 0 { "axes      " } else { "          " },
            a.key,
            a.values.join(" | ")
        ));
    }
    out.push_str(&format!("  shared    {}\n", settings_line(plan)));
    if plan.implied_scratch {
        out.push_str(&format!(
            "            (scratch={} because a device, scheduler, mkfs or kernel axis needs a scratch filesystem; --scratch FS chooses another)\n",
            plan::IMPLIED_SCRATCH
        ));
    }
    // Time: what the parameters decide, per run; space: the largest run at a time.
    let (mut known, mut unknown) = (Duration::ZERO, 0usize);
    let (mut files, mut image) = (0u64, 0u64);
    for &(_, c) in slots {
        let planned = plan.planned_for(&cells[c])?;
        match planned.plan.expected_duration() {
            Some(d) => known += d,
            None => unknown += 1,
        }
        files = files.max(planned.plan.space_needed());
        let target = plan.target_for(&cells[c])?;
        if let Some(s) = target.scratch() {
            image = image.max(
                s.size
                    .unwrap_or_else(|| s.spec.default_size(planned.plan.space_needed())),
            );
        }
    }
    out.push_str(&format!(
        "  time      {} measured{}, plus each run's setup (files written before measuring{})\n",
        crate::units::clock(known),
        if unknown > 0 {
            format!(
                " in {} runs, and {unknown} runs as long as the device takes",
                slots.len() - unknown
            )
        } else {
            String::new()
        },
        match (image > 0, plan.boots_kernels()) {
            (true, true) =>
                ", making and removing a scratch filesystem, and booting a VM for each run of another kernel",
            (true, false) => ", and making and removing a scratch filesystem",
            _ => "",
        }
    ));
    let space = if image > 0 {
        format!(
            "one scratch image at a time, up to {} (sparse; files up to {}; a ram device keeps it in memory)",
            human_size(image),
            human_size(files)
        )
    } else {
        format!("up to {} of files at a time", human_size(files))
    };
    out.push_str(&format!(
        "  space     {space}; about 6 bytes a call in the results store\n"
    ));
    if let Some(p) = plan.placement.as_ref().filter(|p| p.engine != "local") {
        let nodes = match p.nodes.as_slice() {
            [] => "any node".to_string(),
            some => format!("any of {}", some.join(",")),
        };
        let spread = if p.per_host {
            "the whole matrix on every node (the host axis)".to_string()
        } else {
            format!("each run on {nodes}")
        };
        out.push_str(&format!(
            "  placement {}: {spread}{}{}\n",
            p.engine,
            p.partition
                .as_ref()
                .map(|x| format!(", partition {x}"))
                .unwrap_or_default(),
            p.parallel.map(|k| format!(", at most {k} at once")).unwrap_or_default()
        ));
    }
    out.push_str("  order     ");
    let shown: Vec<String> = slots
        .iter()
        .take(cells.len().min(4))
        .map(|(rep, c)| {
            let axes: Vec<String> = cells[*c].iter().map(|(_, v)| v.clone()).collect();
            format!("{} #{}", axes.join("/"), rep + 1)
        })
        .collect();
    out.push_str(&shown.join(", "));
    out.push_str(if slots.len() > shown.len() { ", ...\n" } else { "\n" });
    Ok(out)
}
