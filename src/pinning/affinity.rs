//! The cpus the process may use, and the one way the crate sets a thread's affinity: on Linux
//! `sched_setaffinity` (one cpu or many); elsewhere `core_affinity`, which cannot widen a set.

/// The cpus the process may run on, as the system numbers them.
pub(crate) fn cpus() -> Vec<usize> {
    core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|id| id.id)
        .collect()
}

/// Lets the calling thread run on `cpus` only; false if the system refused (or `cpus` names
/// none it can set).
#[cfg(target_os = "linux")]
pub(super) fn set_current(cpus: &[usize]) -> bool {
    let size = libc::CPU_SETSIZE as usize;
    if !cpus.iter().any(|&cpu| cpu < size) {
        return false;
    }
    // SAFETY: an all-zero `cpu_set_t` is a valid empty set; `CPU_SET` writes within it for ids
    // below `CPU_SETSIZE` (checked); `sched_setaffinity` only reads it, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus.iter().filter(|&&cpu| cpu < size) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Elsewhere a thread can be pinned to one cpu, and never widened again.
#[cfg(not(target_os = "linux"))]
pub(super) fn set_current(cpus: &[usize]) -> bool {
    match cpus {
        [cpu] => core_affinity::set_for_current(core_affinity::CoreId { id: *cpu }),
        _ => false,
    }
}
