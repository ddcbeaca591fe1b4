//! `--engine k8s --emit FILE`: a matrix's runs as a Kubernetes Indexed Job for a user to
//! apply (`kubectl apply -f FILE`); fsynclab starts no pod itself.
//!
//! One completion per run: the pod of completion K runs `fsynclab matrix --run-cell ID:I`,
//! I the K-th of the runs emitted (all of them, or those `--resume` finds missing), as a
//! Slurm task does. The pods are privileged (loop devices, mounts and sysctls for scratch
//! cells come from the cluster, never from fsynclab escalating itself), never two on one
//! node (a required pod anti-affinity on the matrix's label, as Slurm's `--exclusive`), and
//! know their node (`FSYNCLAB_HOST` from `spec.nodeName`: a pod's hostname is the pod's). The
//! store's address, password included, comes from a Secret (`fsynclab-store`, key `url`),
//! never from the manifest. With `--per-host`, one Job per node (`--nodes`), pinned to it by
//! `nodeSelector` (so is each host of an `--axis host=...`). A `--dir` target is the node's directory of that path (a hostPath volume).
//!
//! YAML scalars are written as JSON strings, which YAML reads as double-quoted scalars.

use std::fmt::Write as _;

use anyhow::Result;

use super::Farm;
use crate::commands::matrix::options::FarmOptions;
use crate::error::Usage;
use crate::matrix::plan::Plan;
use crate::store::{Location, Store};

/// The Secret the pods read the store's address from.
pub(crate) const STORE_SECRET: &str = "fsynclab-store";

/// A YAML double-quoted scalar.
fn q(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

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

/// The manifest of the runs at plan `indices` of matrix `matrix_id`.
pub(crate) fn manifest(plan: &Plan, matrix_id: &str, indices: &[usize], options: &FarmOptions) -> String {
    let placement = plan.placement.clone().unwrap_or_default();
    let image = options.image.clone().or(placement.image.clone()).unwrap_or_default();
    let order = plan.order();
    let (_, groups) = super::by_node(plan, indices);
    let dir = plan.target.iter().find(|(k, _)| k == "dir").map(|(_, v)| v.clone());
    let mut out = format!(
        "# fsynclab matrix {matrix_id}: {}, {} runs of {} as Kubernetes Indexed Jobs, one completion a run.\n\
         # The pods read the results store's address from a Secret; then apply this file:\n\
         #   kubectl create secret generic {STORE_SECRET} --from-literal=url='postgres://USER:PASSWORD@HOST/DB'\n\
         #   kubectl apply -f {}\n\
         # `fsynclab matrix --resume {matrix_id}` prints the table once the runs are stored.\n",
        plan.scenario,
        indices.len(),
        order.len(),
        options
            .emit
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    for (node, list) in groups {
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
            format!("exec fsynclab matrix --run-cell {matrix_id}:\"$JOB_COMPLETION_INDEX\"")
        } else {
            format!(
                "set -- $FSYNCLAB_RUNS; shift \"$JOB_COMPLETION_INDEX\"; exec fsynclab matrix --run-cell {matrix_id}:\"$1\""
            )
        };
        let _ = write!(
            out,
            "---\n\
             apiVersion: batch/v1\n\
             kind: Job\n\
             metadata:\n\
             \x20 name: {name}\n\
             \x20 labels:\n\
             \x20   app.kubernetes.io/name: fsynclab\n\
             \x20   fsynclab/matrix: {mid}\n\
             spec:\n\
             \x20 completionMode: Indexed\n\
             \x20 completions: {n}\n\
             \x20 parallelism: {parallel}\n\
             \x20 backoffLimit: {n}\n\
             \x20 template:\n\
             \x20   metadata:\n\
             \x20     labels:\n\
             \x20       app.kubernetes.io/name: fsynclab\n\
             \x20       fsynclab/matrix: {mid}\n\
             \x20   spec:\n\
             \x20     restartPolicy: Never\n",
            name = q(&name),
            mid = q(matrix_id),
            n = list.len(),
        );
        if let Some(n) = &node {
            let _ = write!(out, "      nodeSelector:\n        kubernetes.io/hostname: {}\n", q(n));
        }
        let _ = write!(
            out,
            "      affinity:\n\
             \x20       podAntiAffinity:\n\
             \x20         requiredDuringSchedulingIgnoredDuringExecution:\n\
             \x20         - labelSelector:\n\
             \x20             matchLabels:\n\
             \x20               fsynclab/matrix: {mid}\n\
             \x20           topologyKey: kubernetes.io/hostname\n\
             \x20     containers:\n\
             \x20     - name: fsynclab\n\
             \x20       image: {image}\n\
             \x20       command: [\"sh\", \"-c\", {command}]\n",
            mid = q(matrix_id),
            image = q(&image),
            command = q(&command),
        );
        if let Some(d) = &dir {
            let _ = writeln!(out, "        workingDir: {}", q(d));
        }
        out.push_str("        env:\n");
        if !every {
            let runs: Vec<String> = list.iter().map(usize::to_string).collect();
            let _ = write!(
                out,
                "        - name: FSYNCLAB_RUNS\n          value: {}\n",
                q(&runs.join(" "))
            );
        }
        let _ = write!(
            out,
            "        - name: FSYNCLAB_STORE\n\
             \x20         valueFrom:\n\
             \x20           secretKeyRef:\n\
             \x20             name: {STORE_SECRET}\n\
             \x20             key: url\n\
             \x20       - name: FSYNCLAB_HOST\n\
             \x20         valueFrom:\n\
             \x20           fieldRef:\n\
             \x20             fieldPath: spec.nodeName\n\
             \x20       - name: FSYNCLAB_JOB\n\
             \x20         valueFrom:\n\
             \x20           fieldRef:\n\
             \x20             fieldPath: metadata.name\n\
             \x20       securityContext:\n\
             \x20         privileged: true\n"
        );
        if let Some(d) = &dir {
            let _ = write!(
                out,
                "        volumeMounts:\n\
                 \x20       - name: target\n\
                 \x20         mountPath: {d}\n\
                 \x20     volumes:\n\
                 \x20     - name: target\n\
                 \x20       hostPath:\n\
                 \x20         path: {d}\n\
                 \x20         type: DirectoryOrCreate\n",
                d = q(d)
            );
        }
    }
    out
}

/// Kubernetes: the runs as Indexed Jobs in a manifest for `kubectl`; fsynclab starts no
/// pods itself.
pub(crate) struct Kubernetes<'a> {
    pub(crate) options: &'a FarmOptions,
}

impl Farm for Kubernetes<'_> {
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
    let text = manifest(plan, matrix_id, &indices, options);
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

    #[test]
    fn job_names_are_dns_labels() {
        assert_eq!(dns_name("fsynclab-m3-Node_7.lab"), "fsynclab-m3-node-7-lab");
        assert_eq!(q("a \"b\"\n"), r#""a \"b\"\n""#);
    }
}
