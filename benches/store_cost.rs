//! What recording a run in the results store costs: bytes a sample, seconds to encode and
//! insert the run's own samples (as `fsynclab run` records them), seconds to read back, and
//! the size of the HTML report of the run.
//!
//! `cargo bench --bench store_cost -- RESULT.json [more.json...]` with results written by
//! `fsynclab run ... --output RESULT.json`; wrap it in `flock /tmp/fsynclab-machine.lock`,
//! as every timing on the shared machine. Each file is stored three times in a fresh store
//! in the system's temporary directory, and the best time is printed. A run of fewer than
//! 1,000,000 calls is also measured tiled to 1,000,000 (copies shifted by its length), the
//! size of a default fsync-tps run. `--html FILE` also writes the report of all the files.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

use std::time::Instant;

use fsynclab::html::{self, PageRun};
use fsynclab::measure::{OpKind, Sample};
use fsynclab::store::{codec, SampleColumns, SampleRecord, Store};
use fsynclab::sys::Errno;
use serde_json::Value;

type Tuple = (u64, String, u64, u64, Option<String>);

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let html_out = args
        .iter()
        .position(|a| a == "--html")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let files: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--html"))
        .map(|(_, a)| a.clone())
        .collect();
    let mut report_runs = Vec::new();
    if files.is_empty() {
        eprintln!("usage: cargo bench --bench store_cost -- RESULT.json [...]");
        return Ok(());
    }
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let mut result: Value = serde_json::from_str(&text)?;
        let samples: Vec<Tuple> = result["samples"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        (
                            s["t_ns"].as_u64().unwrap_or(0),
                            s["op"].as_str().unwrap_or("").to_string(),
                            s["latency_ns"].as_u64().unwrap_or(0),
                            s["bytes"].as_u64().unwrap_or(0),
                            s.get("error").and_then(Value::as_str).map(str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        result.as_object_mut().map(|o| o.remove("samples"));
        let measured_s = result["duration_s"].as_f64().unwrap_or(0.0);
        println!(
            "{file}: {} samples, measured part {measured_s:.1} s, JSON {} bytes ({:.1} a sample)",
            samples.len(),
            text.len(),
            text.len() as f64 / samples.len().max(1) as f64
        );
        measure(&file, &result, &as_samples(&samples)?, measured_s, &mut report_runs)?;
        if samples.len() >= 10_000 && samples.len() < 1_000_000 {
            let span = samples.iter().map(|s| s.0 + s.2).max().unwrap_or(1).max(1);
            let tiled: Vec<Tuple> = (0..1_000_000)
                .map(|i| {
                    let s = &samples[i % samples.len()];
                    let copy = (i / samples.len()) as u64;
                    (s.0 + copy * span, s.1.clone(), s.2, s.3, s.4.clone())
                })
                .collect();
            let tiled_s = measured_s * 1e6 / samples.len() as f64;
            println!("{file} tiled to 1000000 samples ({tiled_s:.1} s of measurement at the same rate):");
            measure(
                &format!("{file} (tiled)"),
                &result,
                &as_samples(&tiled)?,
                tiled_s,
                &mut Vec::new(),
            )?;
        }
    }
    if let Some(out) = html_out {
        let page = html::render(&html::Page {
            title: "fsynclab report".into(),
            runs: report_runs,
            matrix: None,
        });
        std::fs::write(&out, &page)?;
        println!("wrote {out}: {} bytes", page.len());
    }
    Ok(())
}

/// The run's own samples, as `fsynclab run` records them (40 bytes each, kinds and errors
/// as enums), so that the cost measured is that of the real path.
fn as_samples(tuples: &[Tuple]) -> anyhow::Result<Vec<Sample>> {
    tuples
        .iter()
        .map(|(t_ns, op, latency_ns, bytes, error)| {
            Ok(Sample {
                t_ns: *t_ns,
                op: OpKind::from_name(op).ok_or_else(|| anyhow::anyhow!("unknown op {op}"))?,
                latency_ns: *latency_ns,
                bytes: *bytes,
                error: match error {
                    Some(e) => Some(Errno::from_name(e).ok_or_else(|| anyhow::anyhow!("unknown error {e}"))?),
                    None => None,
                },
                process: None,
                tid: 0,
            })
        })
        .collect()
}

/// Encodes, records, reads back and renders one run, printing what each costs.
fn measure<S: SampleRecord>(
    file: &str,
    result: &Value,
    samples: &[S],
    measured_s: f64,
    report_runs: &mut Vec<PageRun>,
) -> anyhow::Result<()> {
    {
        let n = samples.len();

        // Encoding alone.
        let t = Instant::now();
        let block = codec::encode(samples);
        let encode_s = t.elapsed().as_secs_f64();
        println!(
            "  encode: {} bytes, {:.2} bytes a sample, {:.1} ms ({:.0} ns a sample)",
            block.len(),
            block.len() as f64 / n as f64,
            encode_s * 1e3,
            encode_s * 1e9 / n as f64
        );

        // Encode + insert (one transaction, committed), best of three fresh stores; then
        // read back whole and check, outside the timing of the write.
        let (mut best, mut read_best, mut file_bytes) = (f64::MAX, f64::MAX, 0u64);
        let mut stored = None;
        for _ in 0..3 {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("results.sqlite");
            let mut store = Store::open(&path)?;
            let t = Instant::now();
            let id = store.record_run(result, samples, None)?;
            best = best.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let back = store.run(id)?;
            read_best = read_best.min(t.elapsed().as_secs_f64());
            assert_eq!(back.samples, SampleColumns::from_records(samples), "round trip");
            stored = Some(back);
            drop(store);
            file_bytes = 0;
            for e in std::fs::read_dir(dir.path())? {
                file_bytes += e?.metadata()?.len();
            }
        }
        println!(
            "  record (encode + insert + commit), best of 3: {:.1} ms = {:.0} ns a sample = {:.3}% of the measured part; store files {} bytes ({:.2} a sample); read back {:.1} ms",
            best * 1e3,
            best * 1e9 / n as f64,
            best / measured_s * 100.0,
            file_bytes,
            file_bytes as f64 / n as f64,
            read_best * 1e3
        );

        // Read back: decode the run.
        let t = Instant::now();
        let _decoded = codec::decode(&block)?;
        println!("  decode: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);

        // The HTML report of this run alone, as `fsynclab report` reads it from the store.
        let stored = stored.ok_or_else(|| anyhow::anyhow!("{file}: never stored"))?;
        let mut run = PageRun::from_stored(&stored)?;
        run.label = file.to_string();
        let t = Instant::now();
        let page = html::render(&html::Page {
            title: format!("fsynclab report: {file}"),
            runs: vec![run.clone()],
            matrix: None,
        });
        println!(
            "  HTML report of this run: {} bytes, rendered in {:.0} ms",
            page.len(),
            t.elapsed().as_secs_f64() * 1e3
        );
        report_runs.push(run);
    }
    Ok(())
}
