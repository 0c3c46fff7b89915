//! Where a statement is checked and where SQLite runs it: a thread of its
//! own, with a stack of known size.
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
//! whatever the build's frame sizes. A thread per statement costs tens of
//! microseconds, and a statement that blocks (SQLite, until its timeout)
//! holds no worker of the async runtime.

/// The stack each statement's thread gets.
pub(crate) const STACK_BYTES: usize = 64 << 20;

/// Run `work` on a new thread with [`STACK_BYTES`] of stack, in the
/// caller's tracing span; `Err` if the thread could not start or `work`
/// panicked.
pub(crate) async fn on_own_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let span = tracing::Span::current();
    std::thread::Builder::new()
        .name("quiver-sql".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let _entered = span.enter();
            let _ = answer.send(work());
        })
        .map_err(|e| format!("cannot start the statement's thread: {e}"))?;
    answered.await.map_err(|_| "the statement's thread failed".to_owned())
}
