//! `--engine k8s --emit FILE`: a matrix's runs as a Kubernetes Indexed Job for a user to
//! apply (`kubectl apply -f FILE`); fsynclab starts no pod itself.
//!
//! One completion per run: the pod of completion K runs `fsynclab cell ID:I`,
//! I the K-th of the runs emitted (all of them, or those `--resume` finds missing), as a
//! Slurm task does. The pods are privileged (loop devices, mounts and sysctls for scratch
//! cells come from the cluster, never from fsynclab escalating itself), never two on one
//! node (a required pod anti-affinity on the matrix's label, as Slurm's `--exclusive`), and
//! know their node (`FSYNCLAB_HOST` from `spec.nodeName`: a pod's hostname is the pod's). The
//! store's address, password included, comes from a Secret (`fsynclab-store`, key `url`),
//! never from the manifest. With `--per-host`, one Job per node (`--nodes`), pinned to it by
//! `nodeSelector` (so is each host of an `--axis host=...`). A `--dir` target is the node's directory of that path (a hostPath volume).
//!
//! The manifest is built as data and written as JSON, which `kubectl` reads (and which is
//! YAML too): a `List` of the Jobs. JSON has no comments: which runs a Job makes and where
//! its pods find the store are said in its annotations (`fsynclab/runs`, `fsynclab/store`).

use anyhow::Result;
use serde_json::{json, Value};

use super::Farm;
use crate::commands::matrix::options::FarmOptions;
use crate::error::Usage;
use crate::matrix::plan::Plan;
use crate::store::{Location, Store};

/// The Secret the pods read the store's address from.
pub(crate) const STORE_SECRET: &str = "fsynclab-store";

/// A name Kubernetes takes for a Job (RFC 1123: lower case, digits and `-`, at most 63).
fn dns_name(text: &str) -> String {
    let mut name: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(63);
    name.trim_matches('-').to_string()
}

/// The manifest of the runs at plan `indices` of matrix `matrix_id`, the pods running
/// `image`: a `List` of one Job per node the runs are pinned to (one Job if none is).
pub(crate) fn manifest(plan: &Plan, matrix_id: &str, indices: &[usize], image: &str) -> Value {
    let placement = plan.placement.clone().unwrap_or_default();
    let order = plan.order();
    let (_, groups) = super::by_node(plan, indices);
    let dir = plan.target.iter().find(|(k, _)| k == "dir").map(|(_, v)| v.as_str());
    let about = json!({
        "fsynclab/runs": format!(
            "fsynclab matrix {matrix_id}: {}, {} runs of {}, one completion a run; `fsynclab matrix --resume {matrix_id}` prints the table once the runs are stored",
            plan.scenario,
            indices.len(),
            order.len(),
        ),
        "fsynclab/store": format!(
            "the pods read the results store's address from the Secret {STORE_SECRET} (key url): kubectl create secret generic {STORE_SECRET} --from-literal=url='postgres://USER:PASSWORD@HOST/DB'"
        ),
    });
    let labels = json!({
        "app.kubernetes.io/name": "fsynclab",
        "fsynclab/matrix": matrix_id,
    });
    let jobs: Vec<Value> = groups
        .into_iter()
        .map(|(node, list)| {
            let name = match &node {
                Some(n) => dns_name(&format!("fsynclab-{matrix_id}-{n}")),
                None => dns_name(&format!("fsynclab-{matrix_id}")),
            };
            let parallel = match &node {
                Some(_) => 1,
                None => placement.parallel.map_or(list.len(), |k| k as usize).min(list.len()),
            };
            let every = list.len() == order.len();
            let command = if every {
                format!("exec fsynclab cell {matrix_id}:\"$JOB_COMPLETION_INDEX\"")
            } else {
                format!("set -- $FSYNCLAB_RUNS; shift \"$JOB_COMPLETION_INDEX\"; exec fsynclab cell {matrix_id}:\"$1\"")
            };
            let mut env = Vec::new();
            if !every {
                let runs: Vec<String> = list.iter().map(usize::to_string).collect();
                env.push(json!({"name": "FSYNCLAB_RUNS", "value": runs.join(" ")}));
            }
            env.extend([
                json!({"name": "FSYNCLAB_STORE", "valueFrom": {"secretKeyRef": {"name": STORE_SECRET, "key": "url"}}}),
                json!({"name": "FSYNCLAB_HOST", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}),
                json!({"name": "FSYNCLAB_JOB", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
            ]);
            let mut container = json!({
                "name": "fsynclab",
                "image": image,
                "command": ["sh", "-c", command],
                "env": env,
                "securityContext": {"privileged": true},
            });
            let mut pod = json!({
                "restartPolicy": "Never",
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": {"fsynclab/matrix": matrix_id}},
                            "topologyKey": "kubernetes.io/hostname",
                        }],
                    },
                },
            });
            if let Some(n) = &node {
                pod["nodeSelector"] = json!({"kubernetes.io/hostname": n});
            }
            if let Some(d) = dir {
                container["workingDir"] = json!(d);
                container["volumeMounts"] = json!([{"name": "target", "mountPath": d}]);
                pod["volumes"] = json!([{
                    "name": "target",
                    "hostPath": {"path": d, "type": "DirectoryOrCreate"},
                }]);
            }
            pod["containers"] = json!([container]);
            json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "labels": labels, "annotations": about},
                "spec": {
                    "completionMode": "Indexed",
                    "completions": list.len(),
                    "parallelism": parallel,
                    "backoffLimit": list.len(),
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            })
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": jobs})
}

/// Kubernetes: the runs as Indexed Jobs in a manifest for `kubectl`; fsynclab starts no
/// pods itself.
pub(crate) struct Kubernetes<'a> {
    pub(crate) options: &'a FarmOptions,
}

impl Farm for Kubernetes<'_> {
    /// A manifest needs a file to go to (a resumed matrix without one prints its table) and
    /// an image, given or the stored matrix's; `--dry-run` writes nothing.
    fn check_options(&self, stored: Option<&Plan>) -> Result<(), Usage> {
        let options = self.options;
        if options.dry_run {
            return Ok(());
        }
        if options.emit.is_none() && stored.is_none() {
            return Err(Usage(
                "--engine k8s writes a manifest for kubectl: give --emit FILE (fsynclab starts no pods itself)".into(),
            ));
        }
        let stored_image = stored.and_then(|p| p.placement.as_ref()).and_then(|p| p.image.as_ref());
        if options.emit.is_some() && options.image.is_none() && stored_image.is_none() {
            return Err(Usage(
                "--engine k8s: give --image IMAGE, a container image with fsynclab in it (its PATH or /usr/local/bin)"
                    .into(),
            ));
        }
        Ok(())
    }

    fn check(&self) -> Result<(), Usage> {
        Ok(())
    }

    /// Pods share no file. And an `--emit FILE` that cannot be written (a missing directory,
    /// a device that takes no writes, what `--output` refuses) is refused here, before the
    /// matrix is stored (issue 24).
    fn check_store(&self, at: &Location) -> Result<(), Usage> {
        if let Location::File(p) = at {
            return Err(Usage(format!(
                "--engine k8s: the results store {} is a file, which pods cannot share; give --store postgres://USER@HOST/DB",
                crate::recording::shown(p)
            )));
        }
        match &self.options.emit {
            Some(file) => crate::named_file::check_option("--emit", file, at.as_file()),
            None => Ok(()),
        }
    }

    /// A manifest is written without asking the cluster: the nodes are the ones named.
    fn nodes(&self) -> Result<Vec<String>> {
        Err(Usage(
            "--engine k8s --per-host: name the nodes with --nodes N1,N2 (a manifest is written without asking the cluster)"
                .into(),
        )
        .into())
    }

    /// A Job written is started by `kubectl`, not followed: nothing to wait for here.
    fn check_none_running(&self, _matrix_id: &str) -> Result<()> {
        Ok(())
    }

    /// Resumed without `--emit`: what is stored, and how to make the rest.
    fn submits_nothing(&self, matrix_id: &str, missing: usize, total: usize) -> Option<String> {
        self.options.emit.is_none().then(|| {
            format!(
                "fsynclab matrix {matrix_id}: {missing} of {total} runs are not stored yet; the table of those that are (`fsynclab matrix --resume {matrix_id} --emit FILE` writes a Job of the runs left):"
            )
        })
    }

    fn submit(
        &self,
        plan: &Plan,
        matrix_id: &str,
        slots: &[(u32, usize)],
        _store: Store,
        at: &Location,
    ) -> Result<i32> {
        emit(plan, matrix_id, slots, at, self.options)
    }
}

/// Writes the manifest to `--emit FILE` and says how to start it; the exit status. A file is
/// written beside and renamed into place ([`crate::named_file`]): a failure leaves none of it.
fn emit(plan: &Plan, matrix_id: &str, slots: &[(u32, usize)], store: &Location, options: &FarmOptions) -> Result<i32> {
    let indices = super::indices_of(plan, slots);
    let Some(file) = &options.emit else {
        return Err(Usage("--engine k8s: give --emit FILE".into()).into());
    };
    let placement = plan.placement.clone().unwrap_or_default();
    let image = options.image.clone().or(placement.image).unwrap_or_default();
    let mut text = serde_json::to_string_pretty(&manifest(plan, matrix_id, &indices, &image))?;
    text.push('\n');
    crate::named_file::write_option("--emit", file, store.as_file(), |out| {
        use std::io::Write;
        Ok(out.write_all(text.as_bytes())?)
    })?;
    note!(
        "fsynclab matrix {matrix_id}: {} runs as an Indexed Job in {}; `kubectl create secret generic {STORE_SECRET} --from-literal=url=...` (the store's address), then `kubectl apply -f {}`; `fsynclab matrix --resume {matrix_id}` prints the table once they are stored",
        indices.len(),
        file.display(),
        file.display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::matrix::plan::{Axis, Placement};

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(dns_name("fsynclab-m3-Node_7.lab"), "fsynclab-m3-node-7-lab");
    }

    /// Two hosts x two cells x two repeats: a List of a Job per host, each making its four
    /// runs (named in FSYNCLAB_RUNS) one completion at a time, in the node's --dir.
    #[test]
    fn a_manifest_is_a_list_of_a_job_per_host() {
        let axis = |key: &str, values: &[&str]| Axis {
            key: key.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let plan = Plan {
            scenario: "fsync-tps".into(),
            sets: Vec::new(),
            target: vec![("dir".into(), "/var/tmp/fsynclab".into())],
            axes: vec![
                axis("host", &["node-a", "node-b"]),
                axis("coordination", &["none", "wal"]),
            ],
            repeat: 2,
            figures: Vec::new(),
            columns: None,
            implied_scratch: false,
            placement: Some(Placement {
                engine: "k8s".into(),
                ..Placement::default()
            }),
            kernel_timeout: None,
            origin: None,
        };
        let all: Vec<usize> = (0..8).collect();
        let m = manifest(&plan, "m1", &all, "registry.example/fsynclab:1");
        assert_eq!(m["kind"], "List");
        let jobs = m["items"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        let mut runs = Vec::new();
        for (job, node) in jobs.iter().zip(["node-a", "node-b"]) {
            assert_eq!(job["apiVersion"], "batch/v1");
            assert_eq!(job["kind"], "Job");
            assert_eq!(job["metadata"]["name"], format!("fsynclab-m1-{node}"));
            assert_eq!(job["spec"]["completionMode"], "Indexed");
            assert_eq!(job["spec"]["completions"], 4);
            assert_eq!(job["spec"]["parallelism"], 1);
            let pod = &job["spec"]["template"]["spec"];
            assert_eq!(pod["nodeSelector"]["kubernetes.io/hostname"], node);
            assert_eq!(pod["volumes"][0]["hostPath"]["path"], "/var/tmp/fsynclab");
            let container = &pod["containers"][0];
            assert_eq!(container["image"], "registry.example/fsynclab:1");
            assert_eq!(container["workingDir"], "/var/tmp/fsynclab");
            assert_eq!(container["securityContext"]["privileged"], true);
            let command = container["command"][2].as_str().unwrap();
            assert!(command.contains("exec fsynclab cell m1:\"$1\""), "{command}");
            let env = container["env"].as_array().unwrap();
            let value = |name: &str| env.iter().find(|e| e["name"] == name).unwrap().clone();
            runs.extend(
                value("FSYNCLAB_RUNS")["value"]
                    .as_str()
                    .unwrap()
                    .split(' ')
                    .map(|r| r.parse::<usize>().unwrap()),
            );
            assert_eq!(
                value("FSYNCLAB_STORE")["valueFrom"]["secretKeyRef"]["name"],
                STORE_SECRET
            );
            assert_eq!(
                value("FSYNCLAB_HOST")["valueFrom"]["fieldRef"]["fieldPath"],
                "spec.nodeName"
            );
        }
        runs.sort_unstable();
        assert_eq!(runs, all, "every run in exactly one Job");
    }
}
