//! The parsers against fixture files, and the fingerprint of this machine.

use super::*;

#[test]
fn dirty_background_threshold_from_ratio_or_bytes() {
    let meminfo: crate::kernel::Meminfo =
        "MemTotal: 1000 kB\nMemFree: 600 kB\nActive(file): 200 kB\nInactive(file): 200 kB\n"
            .parse()
            .unwrap();
    let mut sysctls = BTreeMap::from([
        ("dirty_background_ratio".to_string(), 10),
        ("dirty_background_bytes".to_string(), 0),
    ]);
    assert_eq!(
        memory::dirty_background_threshold(&sysctls, &meminfo),
        Some(1000 * 1024 / 100 * 10)
    );
    sysctls.insert("dirty_background_bytes".into(), 4096);
    assert_eq!(memory::dirty_background_threshold(&sysctls, &meminfo), Some(4096));
}

#[test]
fn fingerprint_of_this_machine_names_a_filesystem() {
    let f = fingerprint(Path::new("."));
    assert!(!f.kernel.is_empty());
    assert!(f.cpus >= 1);
    assert!(f.filesystem.is_some(), "no mount found for .");
    assert!(f.sysctls.contains_key("dirty_ratio"));
    if f.filesystem.as_ref().is_some_and(|fs| fs.fstype == "ext4") {
        let journal = f.journal.expect("an ext4 has journal facts");
        assert!(["jbd2", "none"].contains(&journal.kind.as_str()), "{journal:?}");
    }
}
