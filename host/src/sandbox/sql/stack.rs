//! Where a statement is checked and where SQLite runs it: a pool of
//! threads with stacks of known size.
//!
//! A host import runs on the guest call's fiber, whose stack is what the
//! engine gives an async call less what the guest used: about 1 MiB is
//! left for host code. The policy's walk, dropping the parsed tree and
//! SQLite's planner all recurse once per level of a statement's tree, and
//! the parser builds some trees without recursing: `1 + 1 + …` within the
//! 64 KiB size limit is 16,000 levels deep. On the fiber such a statement
//! overflowed the stack and took the whole host down. Here it has
//! [`STACK_BYTES`] (reserved address space; only the pages it touches
//! cost memory), enough for the deepest tree the size limit lets through,
//! whatever the build's frame sizes. A statement that blocks (SQLite,
//! until its timeout) holds no worker of the async runtime.
//!
//! The threads are kept: starting one with such a stack cost about 70 µs,
//! twice a statement (BENCHMARKS.md, "databases"). A job goes to an idle
//! thread, else to a new one while there are fewer than [`MAX_THREADS`],
//! else it waits its turn. A thread idle for [`IDLE_FOR`] ends, which
//! gives back the stack pages a deep statement touched.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The stack each statement's thread gets.
pub(crate) const STACK_BYTES: usize = 64 << 20;

/// At most this many statements are checked or run at once; the rest
/// wait. As many as the engine runs guest calls by default
/// (`[engine] max_concurrency`), each of which runs one statement at a time.
pub(crate) const MAX_THREADS: usize = 64;

/// How long a thread waits for work before it ends.
pub(crate) const IDLE_FOR: Duration = Duration::from_secs(30);

/// A job runs its work and hands back how to deliver the answer, which
/// the thread calls once it counts itself idle again: a caller that sends
/// its next statement the moment it has an answer finds the thread free.
type Job = Box<dyn FnOnce() -> Deliver + Send>;
type Deliver = Box<dyn FnOnce() + Send>;

struct State {
    /// Jobs no thread has taken yet.
    queue: VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads alive and running no job.
    idle: usize,
}

struct Pool {
    state: Mutex<State>,
    work: Condvar,
    /// Threads alive at most.
    max: usize,
}

static POOL: Pool = Pool::new(MAX_THREADS);

impl Pool {
    const fn new(max: usize) -> Self {
        Pool { state: Mutex::new(State { queue: VecDeque::new(), threads: 0, idle: 0 }), work: Condvar::new(), max }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn submit(&'static self, job: Job) -> Result<(), String> {
        let mut state = self.lock();
        state.queue.push_back(job);
        if state.queue.len() <= state.idle {
            self.work.notify_one();
            return Ok(());
        }
        if state.threads >= self.max {
            return Ok(());
        }
        state.threads += 1;
        state.idle += 1;
        drop(state);
        let started =
            std::thread::Builder::new().name("quiver-sql".into()).stack_size(STACK_BYTES).spawn(move || self.serve());
        if let Err(e) = started {
            let mut state = self.lock();
            state.threads -= 1;
            state.idle -= 1;
            // With no thread alive the jobs would wait for ever: drop
            // them, which answers each caller with an error.
            if state.threads == 0 {
                state.queue.clear();
                return Err(format!("cannot start the statement's thread: {e}"));
            }
        }
        Ok(())
    }

    fn serve(&self) {
        let mut state = self.lock();
        loop {
            let Some(job) = state.queue.pop_front() else {
                let (woken, waited) = self.work.wait_timeout(state, IDLE_FOR).unwrap_or_else(PoisonError::into_inner);
                state = woken;
                if waited.timed_out() && state.queue.is_empty() {
                    state.idle -= 1;
                    state.threads -= 1;
                    return;
                }
                continue;
            };
            state.idle -= 1;
            drop(state);
            // A job that panics drops its answer unsent, which the caller
            // reads as a failure; the thread goes on serving.
            let deliver = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            self.lock().idle += 1;
            if let Ok(deliver) = deliver {
                deliver();
            }
            state = self.lock();
        }
    }
}

/// Run `work` on one of the pool's threads, with [`STACK_BYTES`] of stack,
/// in the caller's tracing span; `Err` if no thread could start or `work`
/// panicked.
pub(crate) async fn on_own_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    POOL.run(work).await
}

impl Pool {
    async fn run<T: Send + 'static>(&'static self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        self.submit(Box::new(move || {
            // A caller that gave up while the job waited (its call timed out)
            // needs no answer: the statement is not run.
            if answer.is_closed() {
                return Box::new(|| ()) as Deliver;
            }
            let done = span.in_scope(work);
            Box::new(move || {
                let _ = answer.send(done);
            })
        }))?;
        answered.await.map_err(|_| "the statement's thread failed".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every job gets the big stack, a thread is reused rather than one
    /// started per job, and a panicking job neither answers nor kills its
    /// thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_share_threads_with_the_big_stack() {
        fn deep(n: usize) -> usize {
            // ~4 KiB a frame: 8,000 frames need 32 MiB, far past a
            // default thread's 2 MiB.
            let pad = std::hint::black_box([n as u8; 4096]);
            if n == 0 { pad[0] as usize } else { deep(n - 1) + usize::from(pad[1] == 0) }
        }
        let deepest = on_own_stack(|| deep(8_000)).await.expect("a deep job");
        assert!(deepest > 0);
        let ids: Vec<_> = futures_ids(16).await;
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert!(distinct.len() < ids.len(), "16 jobs one after another used {} threads", distinct.len());
        let failed = on_own_stack(|| -> usize { panic!("a job that panics") }).await;
        assert_eq!(failed.unwrap_err(), "the statement's thread failed");
        assert_eq!(on_own_stack(|| 7).await, Ok(7), "the pool serves after a panic");
        assert!(POOL.lock().threads <= MAX_THREADS);
    }

    /// A job whose caller gave up while it waited for a thread (the call
    /// timed out) is dropped unrun: a statement nobody waits for never
    /// reaches the database.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_whose_caller_gave_up_is_not_run() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        static ONE: Pool = Pool::new(1);
        let (started, running) = tokio::sync::oneshot::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let busy = tokio::spawn(ONE.run(move || {
            started.send(()).unwrap();
            released.recv().unwrap();
        }));
        running.await.unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let waited =
            tokio::time::timeout(Duration::from_millis(50), ONE.run(move || flag.store(true, Ordering::SeqCst)));
        assert!(waited.await.is_err(), "the only thread is busy: the job waits");
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        // Jobs are taken in order: once this one ran, the abandoned one was taken.
        assert_eq!(ONE.run(|| 1).await, Ok(1));
        assert!(!ran.load(Ordering::SeqCst), "the abandoned job ran");
    }

    async fn futures_ids(n: usize) -> Vec<std::thread::ThreadId> {
        let mut ids = Vec::new();
        for _ in 0..n {
            ids.push(on_own_stack(|| std::thread::current().id()).await.expect("a job"));
        }
        ids
    }
}
