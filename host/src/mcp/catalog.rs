//! The merged view: every server's tools, prompts, resources and resource templates in one list,
//! names prefixed per server (resource URIs as `<server>+<uri>`), filtered by the caller's
//! permit, in pages. Servers are asked in parallel, each within its timeout; one that is down or
//! fails is left out and named in the result's `_meta` (`wasmgate/unavailable`), never failing
//! the rest.
//!
//! A page cursor is the offset into the merged list (`o<n>`): the list is gathered afresh for
//! each page, so a page may repeat or skip an item when a server's list changed in between, as
//! any cursor over a changing list may.

use futures_util::future::join_all;
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value, json};

use super::Hub;
use super::error::{McpError, from_service};
use super::permit::Permit;
use super::upstream::Upstream;

/// What a listing lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl Kind {
    /// The result's array field.
    fn field(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Prompts => "prompts",
            Self::Resources => "resources",
            Self::Templates => "resourceTemplates",
        }
    }

    /// The item field that names it, and so gets the server's mark.
    fn key(self) -> &'static str {
        match self {
            Self::Tools | Self::Prompts => "name",
            Self::Resources => "uri",
            Self::Templates => "uriTemplate",
        }
    }
}

/// One page of the merged list of `kind`, as the result of its `*/list` method.
pub async fn list(
    hub: &Hub,
    kind: Kind,
    permit: &Permit,
    cursor: Option<&str>,
) -> Result<Value, McpError> {
    let offset = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| McpError::InvalidParams("unknown cursor".to_owned()))?,
    };
    let servers = hub.servers();
    let asked = servers.iter().map(|server| async move {
        let items = match server.peer() {
            Some(peer) => {
                let listed = tokio::time::timeout(server.timeout, fetch(&peer, kind)).await;
                match listed {
                    Ok(Ok(items)) => Ok(items),
                    Ok(Err(e)) => {
                        if !matches!(e, rmcp::ServiceError::McpError(_)) {
                            server.mark_broken(&peer);
                        }
                        Err(from_service(&server.name, e))
                    }
                    Err(_) => Err(McpError::Timeout(server.name.to_string())),
                }
            }
            None => Err(McpError::Unavailable(server.name.to_string())),
        };
        (server, items)
    });
    let mut merged = Vec::new();
    let mut unavailable = Vec::new();
    for (server, items) in join_all(asked).await {
        match items {
            Ok(items) => merged.extend(
                items
                    .into_iter()
                    .filter_map(|item| mark(server, kind, item, permit)),
            ),
            Err(e) => {
                tracing::warn!(server = &*server.name, "left out of a listing: {e}");
                unavailable.push(Value::from(server.name.to_string()));
            }
        }
    }
    let total = merged.len();
    let end = offset.saturating_add(hub.config().page_size).min(total);
    let page: Vec<Value> = merged.drain(offset.min(end)..end).collect();
    let mut result = Map::new();
    result.insert(kind.field().to_owned(), Value::Array(page));
    if end < total {
        result.insert("nextCursor".to_owned(), format!("o{end}").into());
    }
    if !unavailable.is_empty() {
        result.insert(
            "_meta".to_owned(),
            json!({"wasmgate/unavailable": unavailable}),
        );
    }
    Ok(Value::Object(result))
}

/// Every item of `kind` the server lists (all its pages), as JSON.
async fn fetch(peer: &Peer<RoleClient>, kind: Kind) -> Result<Vec<Value>, rmcp::ServiceError> {
    fn json<T: serde::Serialize>(items: Vec<T>) -> Vec<Value> {
        items
            .iter()
            .filter_map(|i| serde_json::to_value(i).ok())
            .collect()
    }
    Ok(match kind {
        Kind::Tools => json(peer.list_all_tools().await?),
        Kind::Prompts => json(peer.list_all_prompts().await?),
        Kind::Resources => json(peer.list_all_resources().await?),
        Kind::Templates => json(peer.list_all_resource_templates().await?),
    })
}

/// The item as the merged view shows it (its name or URI marked with its server), or `None`
/// when the caller may not see it.
fn mark(server: &Upstream, kind: Kind, mut item: Value, permit: &Permit) -> Option<Value> {
    let own = item.get(kind.key())?.as_str()?.to_owned();
    let visible = match kind {
        Kind::Tools | Kind::Prompts => permit.allows(&server.name, &own),
        Kind::Resources | Kind::Templates => permit.allows_resources(&server.name),
    };
    if !visible {
        return None;
    }
    let merged = match kind {
        Kind::Tools | Kind::Prompts => format!("{}{own}", server.prefix),
        Kind::Resources | Kind::Templates => format!("{}+{own}", server.name),
    };
    item[kind.key()] = merged.into();
    Some(item)
}
