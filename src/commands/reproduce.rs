//! `fsynclab reproduce [SEED...] [--quick|--full] [--format text|markdown|json]`: its
//! arguments read into what a reproduction is asked for ([`crate::reproduce::Request`]);
//! the seeds, their runs, verdicts and table are `crate::reproduce`'s.

use anyhow::Result;

use crate::cli::ReproduceArgs;
use crate::reproduce::{self, Request, Size};

pub(crate) fn run(args: &ReproduceArgs) -> Result<i32> {
    let store = args.store.store.as_deref();
    if let Some(id) = &args.show {
        return reproduce::show_again(id, &args.seeds, store, args.format);
    }
    reproduce::reproduce(&Request {
        seeds: &args.seeds,
        size: match (args.full, args.smoke) {
            (true, _) => Size::Full,
            (false, true) => Size::Smoke,
            (false, false) => Size::Quick,
        },
        runs: args.runs,
        format: args.format,
        backing: args.backing.as_ref(),
        kernel: args.kernel.as_deref(),
        kernel_timeout: args.kernel_timeout.as_deref(),
        store,
        quiet: args.quiet,
    })
}
