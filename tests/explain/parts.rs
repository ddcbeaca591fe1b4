//! Reading an explanation: the calls explained, the parts of a call, and the checks every
//! explained call is held to (its parts add up to it, little of it unattributed).

use serde_json::Value;

/// The explained calls of `op`, slowest first.
pub fn explained<'a>(result: &'a Value, op: &str) -> Vec<&'a Value> {
    result["explain"]["calls"]
        .as_array()
        .expect("explain.calls")
        .iter()
        .filter(|c| c["op"] == op)
        .collect()
}

/// The time of a call's parts whose cause is `cause`.
pub fn ns_of(call: &Value, cause: &str) -> u64 {
    parts(call)
        .iter()
        .filter(|p| p["cause"] == cause)
        .map(|p| p["ns"].as_u64().unwrap())
        .sum()
}

pub fn parts(call: &Value) -> &Vec<Value> {
    call["parts"].as_array().expect("parts")
}

/// The parts add up to the call within 5%, and at most 5% of it is left unattributed.
pub fn assert_parts_add_up(call: &Value) {
    assert_parts_add_up_leaving(call, 0.05);
}

/// The parts add up to the call within 5%, and at most `unattributed_share` of it is left
/// unattributed for want of a trace. The BPF tracer's long sleeps beyond the four whose
/// stacks it keeps per call are counted and said as such by design (a 69.5 ms xfs fsync
/// had 7.8% so in one CI run), not time it could not account for: they do not count.
pub fn assert_parts_add_up_leaving(call: &Value, unattributed_share: f64) {
    let latency = call["latency_ns"].as_u64().unwrap() as f64;
    let total: u64 = parts(call).iter().map(|p| p["ns"].as_u64().unwrap()).sum();
    assert!(
        (total as f64 - latency).abs() <= 0.05 * latency,
        "parts {total} ns vs call {latency} ns: {call:#}"
    );
    let unattributed: u64 = parts(call)
        .iter()
        .filter(|p| p["cause"] == "unattributed")
        .filter(|p| {
            !p["reason"]
                .as_str()
                .unwrap_or("")
                .contains("beyond the longest the kernel keeps")
        })
        .map(|p| p["ns"].as_u64().unwrap())
        .sum();
    let unattributed = unattributed as f64;
    assert!(
        unattributed <= unattributed_share * latency,
        "{unattributed} ns unattributed: {call:#}"
    );
}

/// The commits named in a call's journal parts.
pub fn commits(call: &Value) -> Vec<&Value> {
    parts(call)
        .iter()
        .filter(|p| p["cause"] == "journal_commit")
        .flat_map(|p| p["commits"].as_array().unwrap())
        .collect()
}

/// The calls a stored run explains, from its exported result.
pub fn result_calls(result: &Value) -> Vec<Value> {
    result["explain"]["calls"].as_array().cloned().unwrap_or_default()
}
