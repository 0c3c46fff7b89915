//! The suite's `test://` resources.

use rmcp::ErrorData;
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use serde_json::json;

use crate::fixtures::{PNG, from_json};

/// `resources/list`.
pub fn list() -> ListResourcesResult {
    from_json(json!({ "resultType": "complete", "resources": [
        { "uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
          "description": "A static text resource for testing", "mimeType": "text/plain" },
        { "uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
          "description": "A static binary resource (image) for testing", "mimeType": "image/png" },
        { "uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
          "description": "A resource clients may subscribe to", "mimeType": "text/plain" },
    ]}))
}

/// `resources/templates/list`.
pub fn templates() -> ListResourceTemplatesResult {
    from_json(json!({ "resultType": "complete", "resourceTemplates": [
        { "uriTemplate": "test://template/{id}/data", "name": "template", "title": "Resource Template",
          "description": "A resource template with parameter substitution", "mimeType": "application/json" },
    ]}))
}

/// `resources/read`: a fixture, or "resource not found".
pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        "test://static-text" => {
            json!({ "uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource." })
        }
        "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": PNG }),
        "test://watched-resource" => {
            json!({ "uri": uri, "mimeType": "text/plain", "text": "Watched resource content" })
        }
        _ => match uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
            Some(id) if !id.is_empty() && !id.contains('/') => json!({
                "uri": uri, "mimeType": "application/json",
                "text": json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
            }),
            _ => return Err(ErrorData::resource_not_found(format!("no resource {uri}"), Some(json!({ "uri": uri })))),
        },
    };
    Ok(from_json(json!({ "resultType": "complete", "contents": [contents] })))
}
