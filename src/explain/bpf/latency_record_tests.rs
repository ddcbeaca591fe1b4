//! Tests of the every-call record read from the ring buffer's bytes: every field at its
//! offset, a short record refused.

use super::*;

fn put(buf: &mut [u8], at: usize, v: &[u8]) {
    buf[at..at + v.len()].copy_from_slice(v);
}

#[test]
fn a_latency_record_reads_back_field_by_field() {
    let mut b = vec![0u8; LATENCY_BYTES];
    put(&mut b, 0, &7_000u64.to_ne_bytes());
    put(&mut b, 8, &12_345_678u64.to_ne_bytes());
    put(&mut b, 16, &42u32.to_ne_bytes());
    put(&mut b, 20, &43u32.to_ne_bytes());
    put(&mut b, 24, &4u32.to_ne_bytes()); // syncfs
    put(&mut b, 28, &(-5i32).to_ne_bytes()); // EIO
    put(&mut b, 32, b"postgres\0");
    let r = CallLatency::parse(&b).unwrap();
    assert_eq!(r.comm, "postgres");
    assert_eq!((r.start_ns, r.latency_ns, r.pid, r.tid), (7_000, 12_345_678, 42, 43));
    assert_eq!((r.kind, r.ret), (Some(SyncKind::Syncfs), -5));
    assert!(CallLatency::parse(&b[..47]).unwrap_err().contains("disagree"));
}
