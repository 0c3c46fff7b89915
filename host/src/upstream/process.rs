//! A spawned stdio server and every process it starts.
//!
//! The server leads its own process group, so `npx` and the `node` it runs
//! go together. A process that leaves the group (`setsid`, as daemons and
//! some runners do) is still found through its parent links: when the
//! server is stopped, the group and every descendant are stopped first
//! (`SIGSTOP`, so none forks meanwhile), then killed. A graceful close lets
//! the server exit by itself first, which orphans its children (their
//! parent becomes init); so its descendants are noted just before
//! ([`Child::note_descendants`]) and killed after, if they are still the
//! same processes (same start time).
//!
//! The limit: a process whose parent exited while the server ran (a
//! double-forking daemon, the child of a server that crashed) has no link
//! left to the server, and outlives it. Quiver does not make itself a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`), which would catch those: it
//! is a setting of the whole process that embeds Quiver, whose orphans it
//! would then have to reap with `waitpid(-1)`, taking the exit statuses of
//! the embedder's own children. Descendants are found through `/proc`
//! (Linux); elsewhere the process group alone is killed.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// Host variables a stdio server inherits (all others are withheld).
const INHERITED: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];
/// Rounds of looking for descendants to stop (each finds those forked
/// before the previous round stopped their parents).
const ROUNDS: usize = 16;

/// A spawned stdio server, leader of its own process group.
pub(crate) struct Child {
    pub(crate) process: tokio::process::Child,
    group: Option<Pid>,
    /// Its descendants when last noted.
    noted: Vec<Process>,
}

/// One process, told apart from a later one with the same id by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    pid: i32,
    start: u64,
}

impl Child {
    /// Note every process the server has started by now (see the module
    /// documentation), before it is asked to exit.
    pub(crate) fn note_descendants(&mut self) {
        if let Some(group) = self.group {
            self.noted = descendants(&table(), &[group.as_raw_pid()]);
        }
    }

    /// Stop the group and every descendant, then kill them all, now.
    pub(crate) fn kill(mut self) {
        self.kill_all();
    }

    fn kill_all(&mut self) {
        let Some(group) = self.group.take() else { return };
        let _ = kill_process_group(group, Signal::STOP);
        let now = table();
        let mut stopped: Vec<Process> = self
            .noted
            .iter()
            .filter(|p| now.get(&p.pid).is_some_and(|(_, start)| *start == p.start))
            .copied()
            .collect();
        stopped.iter().for_each(|p| signal(p.pid, Signal::STOP));
        for _ in 0..ROUNDS {
            let mut roots: Vec<i32> = stopped.iter().map(|p| p.pid).collect();
            roots.push(group.as_raw_pid());
            let fresh: Vec<Process> =
                descendants(&table(), &roots).into_iter().filter(|p| !stopped.contains(p)).collect();
            if fresh.is_empty() {
                break;
            }
            fresh.iter().for_each(|p| signal(p.pid, Signal::STOP));
            stopped.extend(fresh);
        }
        stopped.iter().for_each(|p| signal(p.pid, Signal::KILL));
        let _ = kill_process_group(group, Signal::KILL);
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn signal(pid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = kill_process(pid, signal);
    }
}

/// Every process: its parent and start time, by id (`/proc/*/stat`; empty
/// where there is no `/proc`).
fn table() -> HashMap<i32, (i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return HashMap::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`: the command may hold anything,
            // so the fields are counted after its last `)`.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some((pid, (fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?)))
        })
        .collect()
}

/// The descendants of `roots` in `table` (not the roots themselves).
fn descendants(table: &HashMap<i32, (i32, u64)>, roots: &[i32]) -> Vec<Process> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, (parent, _)) in table {
        children.entry(*parent).or_default().push(*pid);
    }
    let (mut found, mut queue) = (Vec::new(), roots.to_vec());
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if !roots.contains(child) && !found.iter().any(|p: &Process| p.pid == *child) {
                found.push(Process { pid: *child, start: table[child].1 });
                queue.push(*child);
            }
        }
    }
    found
}

/// Spawn `command` as the leader of a new process group, with only the
/// inherited variables and `env` in its environment.
pub(crate) fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> std::io::Result<Child> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(INHERITED.iter().filter_map(|k| std::env::var_os(k).map(|v| (k, v))))
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let process = cmd.spawn()?;
    let group = process.id().and_then(|id| Pid::from_raw(id as i32));
    Ok(Child { process, group, noted: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_follow_parent_links_past_their_group() {
        let table: HashMap<i32, (i32, u64)> =
            [(10, (1, 5)), (11, (10, 6)), (12, (11, 7)), (13, (1, 8)), (14, (12, 9))].into_iter().collect();
        let mut found: Vec<i32> = descendants(&table, &[10]).iter().map(|p| p.pid).collect();
        found.sort();
        assert_eq!(found, [11, 12, 14]);
        assert_eq!(descendants(&table, &[13]), []);
    }

    #[test]
    fn this_process_is_in_the_table() {
        let table = table();
        let me = std::process::id() as i32;
        assert_eq!(table.get(&me).map(|(parent, _)| *parent), Some(std::os::unix::process::parent_id() as i32));
    }
}
