//! The protocol era of a server: learnt once, then asked for directly.
//!
//! A server never reached speaks either era, so the first handshake asks
//! `server/discover` and falls back to `initialize` (rmcp's
//! `ClientLifecycleMode::Auto`). A server that has not answered within
//! rmcp's probe window (10 s: a slow start, a loaded machine) is taken for
//! a legacy one. When its answer to the probe then arrives, rmcp would
//! read it as the answer to `initialize`, and the handshake would fail
//! ("conflict initialized response id"). [`Probed`] drops that answer, as
//! a JSON-RPC client may drop the answer to a request it no longer waits
//! for, and notes what it said ([`Late`]): a legacy server's refusal lets
//! the handshake go on; a 2026 server's answer means the connection is
//! opened again in its era. Once a handshake has succeeded, the server's
//! era is known ([`Era::of`]), and its restarts ask in it from the start,
//! with no probe to outwait.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ProtocolVersion, RequestId, ServerJsonRpcMessage};
use rmcp::service::{ClientLifecycleMode, Peer};
use rmcp::transport::Transport;

/// The protocol era a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28 and later: `server/discover`, no session.
    Modern,
    /// 2025-11-25 and before: `initialize`.
    Legacy,
}

impl Era {
    /// The era `peer` speaks, once its handshake is done.
    pub(crate) fn of(peer: &Peer<RoleClient>) -> Option<Era> {
        let info = peer.peer_info()?;
        Some(if info.protocol_version >= ProtocolVersion::V_2026_07_28 { Era::Modern } else { Era::Legacy })
    }

    /// How to open a connection to a server of era `era`, or of either.
    pub(crate) fn lifecycle(era: Option<Era>) -> ClientLifecycleMode {
        let modern = vec![ProtocolVersion::V_2026_07_28];
        match era {
            Some(Era::Modern) => ClientLifecycleMode::Discover { preferred_versions: modern },
            Some(Era::Legacy) => ClientLifecycleMode::Initialize,
            None => ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        }
    }
}

/// What the late answer to a given-up probe said of the server's era.
#[derive(Debug, Clone, Default)]
pub(crate) struct Late(Arc<OnceLock<Era>>);

impl Late {
    /// The era the late answer showed, if one came.
    pub(crate) fn era(&self) -> Option<Era> {
        self.0.get().copied()
    }
}

/// A client transport that drops an answer to its first request (the
/// probe) once a later request was sent.
pub(crate) struct Probed<T> {
    inner: T,
    /// The id of the first request sent.
    probe: Option<RequestId>,
    /// Whether a request was sent after it.
    given_up: bool,
    /// What a late answer said.
    late: Late,
}

impl<T> Probed<T> {
    /// `inner`, noting a late answer to its probe in `late`.
    pub(crate) fn new(inner: T, late: Late) -> Probed<T> {
        Probed { inner, probe: None, given_up: false, late }
    }

    /// The era `message` shows, if it answers the probe after it was
    /// given up: a result is a 2026 server's, an error a legacy one's.
    fn late(&self, message: &ServerJsonRpcMessage) -> Option<Era> {
        let (id, era) = match message {
            JsonRpcMessage::Response(response) => (Some(&response.id), Era::Modern),
            JsonRpcMessage::Error(error) => (error.id.as_ref(), Era::Legacy),
            _ => return None,
        };
        (self.given_up && id.is_some() && id == self.probe.as_ref()).then_some(era)
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Probed<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            match &self.probe {
                None => self.probe = Some(request.id.clone()),
                Some(_) => self.given_up = true,
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if let Some(era) = self.late(&message) {
                tracing::debug!(target: "quiver::upstream", ?era, "dropped the late answer to the era probe");
                let _ = self.late.0.set(era);
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
