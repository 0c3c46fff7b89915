//! Progress of a call in flight, from whatever runs it to whoever asked.
//!
//! A face that can show progress (MCP, when the client sent a progress
//! token) gives the call a [`Sink`] ([`Call::progress`](super::Call)); a
//! backend that hears of progress (an upstream server's
//! `notifications/progress`) sends it there. Nothing is reported when no
//! face asked.

use std::sync::Arc;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along, increasing.
    pub progress: f64,
    /// Out of how much, if known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

/// Where progress reports of a call go.
pub type Sink = Arc<dyn Fn(Progress) + Send + Sync>;
