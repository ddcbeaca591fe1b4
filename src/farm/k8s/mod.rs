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

mod manifest;

use std::path::PathBuf;

use anyhow::Result;

use super::{indices_of, Farm, Runs, Submitted};
use crate::error::Usage;
use crate::matrix::plan::{Placement, Plan};
use crate::store::{Location, Store};
use manifest::{manifest, STORE_SECRET};

/// What a matrix asks of Kubernetes, besides the placement every farm takes.
#[derive(Clone, Debug, Default)]
pub(crate) struct K8sOptions {
    /// The manifest to write (`--emit`); none: nothing is handed over (a resumed matrix
    /// prints the table of what is stored).
    pub(crate) emit: Option<PathBuf>,
    /// The container image of the pods (`--image`) [default: the stored matrix's].
    pub(crate) image: Option<String>,
}

/// Kubernetes: the runs as Indexed Jobs in a manifest for `kubectl`; fsynclab starts no
/// pods itself.
pub(crate) struct Kubernetes {
    pub(crate) options: K8sOptions,
}

impl Farm for Kubernetes {
    fn keep(&self, placement: &mut Placement) {
        placement.image = self.options.image.clone();
    }

    /// A manifest needs a file to go to (a resumed matrix without one prints its table) and
    /// an image, given or the stored matrix's.
    fn check_options(&self, stored: Option<&Plan>) -> Result<(), Usage> {
        let options = &self.options;
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

    fn submit(&self, runs: &Runs<'_>, _store: &Store) -> Result<Submitted> {
        emit(runs, &self.options)?;
        Ok(Submitted::HandedOver)
    }
}

/// Writes the manifest to `--emit FILE` and says how to start it. A file is written beside
/// and renamed into place ([`crate::named_file`]): a failure leaves none of it.
fn emit(runs: &Runs<'_>, options: &K8sOptions) -> Result<()> {
    let Runs {
        plan,
        matrix_id,
        slots,
        at: store,
    } = *runs;
    let indices = indices_of(plan, slots);
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
    Ok(())
}
