//! A Kubernetes Indexed Job as data: a `List` of one Job per node the runs are pinned to (one
//! Job if none is), each completion running `fsynclab cell ID:I` in a privileged pod that
//! reads the store's address from a Secret ([`STORE_SECRET`]). `kubectl` reads it as JSON.

use serde_json::{json, Value};

use crate::farm::by_node;
use crate::matrix::plan::Plan;

/// The Secret the pods read the store's address from.
pub(super) const STORE_SECRET: &str = "fsynclab-store";

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
pub(super) fn manifest(plan: &Plan, matrix_id: &str, indices: &[usize], image: &str) -> Value {
    let placement = plan.placement.clone().unwrap_or_default();
    let order = plan.order();
    let (_, groups) = by_node(plan, indices);
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
