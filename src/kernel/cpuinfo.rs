//! `/proc/cpuinfo`: the processor's model, as the first `model name` line says it (x86; the
//! fields are described in Documentation/filesystems/proc.rst, and each architecture prints
//! its own), else the first `cpu model`, `Model` or `uarch` line of other architectures.
//! Every other field is ignored.

use std::str::FromStr;

/// What a host's CPU is, from `/proc/cpuinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuInfo {
    /// `AMD EPYC 7763 64-Core Processor`; None when the kernel does not say.
    pub(crate) model: Option<String>,
}

impl FromStr for CpuInfo {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<CpuInfo, Self::Err> {
        let field = |name: &str| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name && !value.trim().is_empty()).then(|| value.trim().to_string())
            })
        };
        Ok(CpuInfo {
            model: ["model name", "cpu model", "Model", "uarch"]
                .into_iter()
                .find_map(field),
        })
    }
}

impl CpuInfo {
    pub(crate) fn read() -> Option<CpuInfo> {
        std::fs::read_to_string("/proc/cpuinfo").ok()?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_the_first_model_name() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n";
        assert_eq!(
            x86.parse::<CpuInfo>().unwrap().model.as_deref(),
            Some("AMD EPYC 7763 64-Core Processor")
        );
        let riscv = "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdc\nuarch\t\t: sifive,u74-mc\n";
        assert_eq!(
            riscv.parse::<CpuInfo>().unwrap().model.as_deref(),
            Some("sifive,u74-mc")
        );
        assert_eq!("processor\t: 0\n".parse::<CpuInfo>().unwrap().model, None);
    }
}
