//! A server's `tools/list`, paged by hand within caps: at most
//! [`MAX_LIST_PAGES`] pages, at most [`MAX_LIST_BYTES`] for all of them
//! together, and never the same cursor twice.
//!
//! rmcp's `list_all_tools` follows cursors for as long as the server gives
//! them and keeps every page (and caches each one): a server that pages
//! forever grew the host by a gigabyte in seconds. Here each page is
//! counted as it comes, and the list stops at the first cap it passes.

use std::collections::HashSet;

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;

use crate::catalog::shown::shown_bytes;

/// Most pages of one `tools/list` followed; a server that pages on is
/// refused (`Upstream { fault: Protocol }`), as one whose pages together
/// pass 4 MiB is.
pub const MAX_LIST_PAGES: usize = 100;

/// Largest tool list accepted: the JSON of every tool of every page.
pub(crate) const MAX_LIST_BYTES: usize = 4 << 20;

/// Why a list was not had.
pub(crate) enum ListError {
    /// The request failed (closed, refused, not an answer).
    Service(ServiceError),
    /// The server passed a cap: what it did, naming the limit.
    Limit(String),
}

/// Every tool `peer` lists, as JSON, page by page within the caps.
pub(crate) async fn all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Value>, ListError> {
    let (mut tools, mut bytes, mut seen) = (Vec::new(), 0usize, HashSet::new());
    let mut cursor: Option<String> = None;
    for page in 1..=MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        // Not `Peer::list_tools`: it keeps each page in rmcp's response cache.
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let result = match peer.send_request(request).await.map_err(ListError::Service)? {
            ServerResult::ListToolsResult(result) => result,
            _ => return Err(ListError::Service(ServiceError::UnexpectedResponse)),
        };
        for tool in result.tools {
            let tool = serde_json::to_value(tool).map_err(|e| ListError::Limit(format!("a tool is not JSON: {e}")))?;
            bytes += tool.to_string().len() + 1;
            tools.push(tool);
        }
        bytes += result.next_cursor.as_ref().map_or(0, String::len);
        if bytes > MAX_LIST_BYTES {
            let message =
                format!("its tool list passed {bytes} bytes on page {page}, over the limit of {MAX_LIST_BYTES}");
            return Err(ListError::Limit(message));
        }
        match result.next_cursor {
            None => return Ok(tools),
            Some(next) if !seen.insert(next.clone()) => {
                let message = format!(
                    "page {page} of its tool list gave the cursor `{}` again, which would list the same pages forever",
                    shown_bytes(&next, 64)
                );
                return Err(ListError::Limit(message));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(ListError::Limit(format!("its tool list goes on over {MAX_LIST_PAGES} pages")))
}
