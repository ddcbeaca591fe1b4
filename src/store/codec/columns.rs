//! Decoded samples, column by column, with each op-kind and error name once; a sample is
//! read back as a [`SampleRef`] borrowing its names.

use std::collections::HashMap;

use super::{intern, SampleRecord};

/// Samples decoded from one or more blocks, column by column, with the names once each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleColumns {
    pub op_names: Vec<String>,
    pub error_names: Vec<String>,
    pub t_ns: Vec<u64>,
    /// Index into `op_names`.
    pub op: Vec<u32>,
    pub latency_ns: Vec<u64>,
    pub bytes: Vec<u64>,
    /// 0 for success, else 1 + index into `error_names`.
    pub error: Vec<u32>,
    /// The tasks that made the calls (a traced command's), when any sample names one.
    pub process_names: Vec<String>,
    /// Empty when no sample names a task; else one per sample, 0 for none, else 1 + index
    /// into `process_names`.
    pub process: Vec<u32>,
}

/// One sample of [`SampleColumns`], borrowing its names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRef<'a> {
    pub t_ns: u64,
    pub op: &'a str,
    pub latency_ns: u64,
    pub bytes: u64,
    pub error: Option<&'a str>,
    pub process: Option<&'a str>,
}

impl SampleRecord for SampleRef<'_> {
    fn t_ns(&self) -> u64 {
        self.t_ns
    }
    fn op(&self) -> &str {
        self.op
    }
    fn latency_ns(&self) -> u64 {
        self.latency_ns
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn error(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.error.map(std::borrow::Cow::Borrowed)
    }
    fn process(&self) -> Option<&str> {
        self.process
    }
}

impl SampleColumns {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    pub fn get(&self, i: usize) -> SampleRef<'_> {
        SampleRef {
            t_ns: self.t_ns[i],
            op: &self.op_names[self.op[i] as usize],
            latency_ns: self.latency_ns[i],
            bytes: self.bytes[i],
            error: match self.error[i] {
                0 => None,
                e => Some(&self.error_names[e as usize - 1]),
            },
            process: match self.process.get(i) {
                None | Some(0) => None,
                Some(&p) => Some(&self.process_names[p as usize - 1]),
            },
        }
    }

    /// Writes the samples as CSV (RFC 4180): a header `t_ns,op,latency_ns,bytes,error`, then
    /// one line a call, `error` empty for a call that succeeded; samples that name the task
    /// that made them (a traced command's) have a last column `process`. `out` should be
    /// buffered.
    pub fn write_csv<W: std::io::Write>(&self, mut out: W) -> std::io::Result<()> {
        fn field(s: &str) -> std::borrow::Cow<'_, str> {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\"")).into()
            } else {
                s.into()
            }
        }
        let ops: Vec<_> = self.op_names.iter().map(|n| field(n)).collect();
        let errors: Vec<_> = self.error_names.iter().map(|n| field(n)).collect();
        let tasks: Vec<_> = self.process_names.iter().map(|n| field(n)).collect();
        let with_tasks = !self.process.is_empty();
        writeln!(
            out,
            "t_ns,op,latency_ns,bytes,error{}",
            if with_tasks { ",process" } else { "" }
        )?;
        for i in 0..self.len() {
            let error = match self.error[i] {
                0 => "",
                e => &errors[e as usize - 1],
            };
            write!(
                out,
                "{},{},{},{},{error}",
                self.t_ns[i], ops[self.op[i] as usize], self.latency_ns[i], self.bytes[i]
            )?;
            if with_tasks {
                let task = match self.process[i] {
                    0 => "",
                    p => &tasks[p as usize - 1],
                };
                write!(out, ",{task}")?;
            }
            writeln!(out)?;
        }
        out.flush()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = SampleRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The columns of any samples (a run not stored yet, a result file).
    pub fn from_records<S: SampleRecord>(samples: &[S]) -> SampleColumns {
        let mut out = SampleColumns::default();
        let (mut ops, mut errors, mut tasks) = (HashMap::new(), HashMap::new(), HashMap::new());
        let with_tasks = samples.iter().any(|s| s.process().is_some());
        for s in samples {
            if with_tasks {
                let task = s
                    .process()
                    .map_or(0, |p| 1 + intern(&mut out.process_names, &mut tasks, p));
                out.process.push(task);
            }
            out.t_ns.push(s.t_ns());
            out.op.push(intern(&mut out.op_names, &mut ops, s.op()));
            out.latency_ns.push(s.latency_ns());
            out.bytes.push(s.bytes());
            out.error.push(
                s.error()
                    .map_or(0, |e| 1 + intern(&mut out.error_names, &mut errors, &e)),
            );
        }
        out
    }

    /// Appends `other` (the next block of the same run), mapping its names onto ours.
    pub fn append(&mut self, other: SampleColumns) {
        let mut ops: HashMap<String, u32> = self.op_names.iter().cloned().zip(0..).collect();
        let mut errors: HashMap<String, u32> = self.error_names.iter().cloned().zip(0..).collect();
        let op_map: Vec<u32> = other
            .op_names
            .iter()
            .map(|n| intern(&mut self.op_names, &mut ops, n))
            .collect();
        let err_map: Vec<u32> = other
            .error_names
            .iter()
            .map(|n| intern(&mut self.error_names, &mut errors, n))
            .collect();
        // Task columns: either side may have none (all zero).
        if !other.process.is_empty() || !self.process.is_empty() {
            let mut tasks: HashMap<String, u32> = self.process_names.iter().cloned().zip(0..).collect();
            let task_map: Vec<u32> = other
                .process_names
                .iter()
                .map(|n| intern(&mut self.process_names, &mut tasks, n))
                .collect();
            self.process.resize(self.len(), 0);
            if other.process.is_empty() {
                self.process.resize(self.len() + other.len(), 0);
            } else {
                self.process.extend(
                    other
                        .process
                        .iter()
                        .map(|&p| if p == 0 { 0 } else { 1 + task_map[p as usize - 1] }),
                );
            }
        }
        self.t_ns.extend(other.t_ns);
        self.op.extend(other.op.iter().map(|&o| op_map[o as usize]));
        self.latency_ns.extend(other.latency_ns);
        self.bytes.extend(other.bytes);
        self.error.extend(
            other
                .error
                .iter()
                .map(|&e| if e == 0 { 0 } else { 1 + err_map[e as usize - 1] }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{as_tuples, Tuple};
    use super::super::{decode, encode};
    use super::*;

    #[test]
    fn blocks_append_with_their_own_dictionaries() {
        let a: Vec<Tuple> = vec![
            (1, "write".into(), 2, 3, None),
            (2, "fsync".into(), 4, 0, Some("EIO".into())),
        ];
        let b: Vec<Tuple> = vec![
            (3, "fsync".into(), 5, 0, None),
            (4, "fdatasync".into(), 6, 0, Some("ENOSPC".into())),
        ];
        let mut cols = decode(&encode(&a)).unwrap();
        cols.append(decode(&encode(&b)).unwrap());
        let all: Vec<Tuple> = a.into_iter().chain(b).collect();
        assert_eq!(as_tuples(&cols), all);
        assert_eq!(cols.op_names, ["write", "fsync", "fdatasync"]);
        assert_eq!(as_tuples(&SampleColumns::from_records(&all)), all);
    }

    #[test]
    fn samples_as_csv() {
        let samples: Vec<Tuple> = vec![
            (1, "write".into(), 2, 4096, None),
            (5, "fsync".into(), 900, 0, Some("EIO".into())),
            (7, "odd,\"op\"".into(), 1, 0, None),
        ];
        let mut out = Vec::new();
        SampleColumns::from_records(&samples).write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t_ns,op,latency_ns,bytes,error\n1,write,2,4096,\n5,fsync,900,0,EIO\n7,\"odd,\"\"op\"\"\",1,0,\n"
        );
    }

    /// A traced command's samples name their process: format 2, read back exactly, and a
    /// `process` column in CSV; blocks with and without tasks append.
    #[test]
    fn samples_with_tasks_round_trip() {
        let traced = [
            (1u64, "fdatasync", 900u64, 0u64, Some("postgres")),
            (5, "fsync", 1200, 0, Some("pg,bench")),
            (9, "fsync", 300, 0, None),
        ];
        struct Traced<'a>((u64, &'a str, u64, u64, Option<&'a str>));
        impl SampleRecord for Traced<'_> {
            fn t_ns(&self) -> u64 {
                self.0 .0
            }
            fn op(&self) -> &str {
                self.0 .1
            }
            fn latency_ns(&self) -> u64 {
                self.0 .2
            }
            fn bytes(&self) -> u64 {
                self.0 .3
            }
            fn error(&self) -> Option<std::borrow::Cow<'_, str>> {
                None
            }
            fn process(&self) -> Option<&str> {
                self.0 .4
            }
        }
        let samples: Vec<Traced> = traced.iter().map(|&t| Traced(t)).collect();
        let block = encode(&samples);
        assert_eq!(block[0], super::super::FORMAT_WITH_TASKS);
        let cols = decode(&block).unwrap();
        let back: Vec<Option<&str>> = cols.iter().map(|s| s.process).collect();
        assert_eq!(back, [Some("postgres"), Some("pg,bench"), None]);
        assert_eq!(cols, SampleColumns::from_records(&samples));
        let mut out = Vec::new();
        cols.write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t_ns,op,latency_ns,bytes,error,process\n1,fdatasync,900,0,,postgres\n5,fsync,1200,0,,\"pg,bench\"\n9,fsync,300,0,,\n"
        );
        // Untraced blocks stay format 1; appended to traced ones they name no task.
        let plain: Vec<Tuple> = vec![(11, "fsync".into(), 5, 0, None)];
        let plain_block = encode(&plain);
        assert_eq!(plain_block[0], super::super::FORMAT);
        let mut all = decode(&plain_block).unwrap();
        all.append(cols.clone());
        let tasks: Vec<Option<&str>> = all.iter().map(|s| s.process).collect();
        assert_eq!(tasks, [None, Some("postgres"), Some("pg,bench"), None]);
        let mut other_way = cols;
        other_way.append(decode(&plain_block).unwrap());
        assert_eq!(other_way.process.len(), 4);
    }
}
