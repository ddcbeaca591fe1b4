//! `fsynclab matrix`: one scenario in every combination of configurations, each repeated,
//! and seed 002's table of the result. The experiment, in phases:
//!
//! 1. plan: the scenario, the axes and their values (command line and/or a TOML file),
//!    checked whole before anything runs (`matrix::plan`, `matrix::file`);
//! 2. `--dry-run` stops here and prints the cells, the runs, and the time and space they take
//!    ([`dry_run()`]);
//! 3. the matrix is recorded in the results store with its plan, and its runs are made
//!    round-robin, each on a freshly made testbed and recorded as it ends (`farm::local`); an
//!    interrupted matrix is continued with `--resume ID`; each run's place is claimed in the
//!    store first, so that processes continuing one matrix share its runs (`matrix::claim`);
//! 4. the table: one per figure, the best of each row in bold, a marker where a cell differs
//!    significantly from the row's reference column ([`tables`]).
//!
//! On a farm the runs are made by a scheduler's tasks instead of this process, each with
//! the hidden `fsynclab cell` ([`cell`]) on its node and into the shared store: a Slurm job
//! array followed to its end, or a Kubernetes Indexed Job written for `kubectl` (`farm`).
//! This command reads its arguments into the farm's options ([`options`]), chooses the
//! engine, and prints what the runs made.

mod cell;
mod dry_run;
mod options;
mod tables;

use anyhow::Result;

use crate::cli::MatrixArgs;
use crate::error::Usage;
use crate::farm::{self, placement, Farm, Runs, Submitted};
use crate::matrix::{claim, file, plan, table};
use crate::recording::{self, Recording};
use crate::store::{Location, Store};
use dry_run::dry_run;
use options::{engine_and_farm, TableOptions};
use plan::{normalize_key, split_values, Axis, Plan, DEFAULT_REPEAT};
use table::StoredMatrix;
use tables::print_tables;

pub(crate) use cell::cell;

pub(crate) fn run(args: &MatrixArgs) -> Result<i32> {
    super::kernel::refuse(&args.target, "matrix")?;
    if let Some(id) = &args.resume {
        return resume(id, args);
    }
    let (engine, farm) = engine_and_farm(args, None)?;
    let mut plan = plan_of(args)?;
    placement::place(&mut plan, engine, &options::placement(args), farm.as_deref())?;
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
    farm::check_where(farm.as_deref(), &plan, &path)?;
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
    let runs = Runs {
        plan: &plan,
        matrix_id: &id,
        slots: &slots,
        at: &path,
    };
    make_runs(farm.as_deref(), &runs, store, &TableOptions::of(args))
}

/// Makes `runs` on `farm`, or here without one, then prints the tables; the exit status.
fn make_runs(farm: Option<&dyn Farm>, runs: &Runs<'_>, store: Store, options: &TableOptions) -> Result<i32> {
    match farm {
        Some(farm) => {
            let submitted = farm.submit(runs, &store)?;
            print_once_made(submitted, Some(&store), runs.matrix_id, options, true)
        }
        None => {
            let mut recording = Recording::into(store, runs.at.clone());
            let submitted = farm::local::make_here(runs, &mut recording, options.quiet)?;
            print_once_made(submitted, recording.store(), runs.matrix_id, options, false)
        }
    }
}

/// The exit status of matrix `id`'s runs, as `submitted` says they ended, and its tables
/// once they are made (`with_hosts`: on a farm's nodes).
fn print_once_made(
    submitted: Submitted,
    store: Option<&Store>,
    id: &str,
    options: &TableOptions,
    with_hosts: bool,
) -> Result<i32> {
    match submitted {
        Submitted::Stopped(sig) => Ok(128 + sig),
        Submitted::HandedOver => Ok(0),
        Submitted::Followed { failed } => {
            let store = store.ok_or_else(|| anyhow::anyhow!("the matrix's store was closed"))?;
            tables::print_tables_and_close(store, id, options, with_hosts)?;
            Ok(if failed > 0 { 1 } else { 0 })
        }
    }
}

/// `--resume ID`: the runs the matrix still lacks, then its tables. On a farm, only the runs
/// no live task is making are submitted, and claims of tasks that ended are cleared first.
fn resume(id: &str, args: &MatrixArgs) -> Result<i32> {
    let path = store_path(args)?;
    let store = recording::read_store_at(&path)?;
    let stored = StoredMatrix::load(&store, id)?;
    let (_, farm) = engine_and_farm(args, Some(&stored.plan))?;
    let table = TableOptions::of(args);
    let mut slots = farm::remaining(&store, id, &stored.plan)?;
    if args.dry_run {
        print!("{}", dry_run(&stored.plan, &slots)?);
        return Ok(0);
    }
    if slots.is_empty() {
        if !args.quiet {
            note!("fsynclab matrix {id}: every run is made; its table:");
        }
        return print_tables(&store, id, &table).map(|()| 0);
    }
    // A farm that hands nothing over now (a Kubernetes matrix resumed without --emit).
    if let Some(why) = farm
        .as_ref()
        .and_then(|f| f.submits_nothing(id, slots.len(), stored.plan.order().len()))
    {
        note!("{why}");
        return print_tables(&store, id, &table).map(|()| 0);
    }
    // Tasks of an array still waiting would make their runs again.
    if let Some(farm) = &farm {
        farm.check_none_running(id)?;
    }
    farm::check_where(farm.as_deref(), &stored.plan, &path)?;
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
    let runs = Runs {
        plan: &stored.plan,
        matrix_id: id,
        slots: &slots,
        at: &path,
    };
    make_runs(farm.as_deref(), &runs, store, &table)
}

/// The store a matrix is kept in: it must have one.
fn store_path(args: &MatrixArgs) -> Result<Location> {
    store_at(args.store.store.as_deref())
}

/// The store `--store` names (or the default), which a matrix cannot do without.
fn store_at(given: Option<&std::path::Path>) -> Result<Location> {
    recording::store_path(given, false)?.ok_or_else(|| {
        Usage(format!(
            "a matrix lives in the results store, which {}={} turns off: give --store PATH",
            crate::store::STORE_ENV,
            recording::STORE_OFF
        ))
        .into()
    })
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
