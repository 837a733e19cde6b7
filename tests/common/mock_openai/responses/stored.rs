//! The stored responses: `GET` and `DELETE /v1/responses/{id}`, `GET
//! /v1/responses/{id}/input_items`.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::super::{Shared, record};
use super::{error, unauthorized};

fn not_found(id: &str) -> Response {
    error(
        404,
        &format!("Response with id '{id}' not found."),
        None,
        None,
    )
}

pub(in super::super) async fn retrieve(
    State(shared): State<std::sync::Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    record(
        &shared,
        &format!("GET /v1/responses/{id}"),
        &headers,
        &Bytes::new(),
    )
    .await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    match shared.responses.lock().await.get(&id) {
        Some(stored) => axum::Json(stored.response.clone()).into_response(),
        None => not_found(&id),
    }
}

pub(in super::super) async fn delete(
    State(shared): State<std::sync::Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    record(
        &shared,
        &format!("DELETE /v1/responses/{id}"),
        &headers,
        &Bytes::new(),
    )
    .await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    match shared.responses.lock().await.remove(&id) {
        Some(_) => axum::Json(json!({"id": id, "object": "response.deleted", "deleted": true}))
            .into_response(),
        None => not_found(&id),
    }
}

/// `?order=asc|desc` (default desc, newest first), `?limit=1..100` (default 20), `?after=<id>`.
pub(in super::super) async fn input_items(
    State(shared): State<std::sync::Arc<Shared>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    record(
        &shared,
        &format!("GET /v1/responses/{id}/input_items"),
        &headers,
        &Bytes::new(),
    )
    .await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    let query: HashMap<String, String> = query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let Some(stored) = shared.responses.lock().await.get(&id).cloned() else {
        return not_found(&id);
    };
    let mut items = stored.input_items;
    match query.get("order").map(String::as_str) {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(other) => {
            return error(
                400,
                &format!("Invalid value: '{other}'. Supported values are: 'asc' and 'desc'."),
                Some("order"),
                Some("invalid_value"),
            );
        }
    }
    if let Some(after) = query.get("after") {
        match items.iter().position(|i| i["id"] == after.as_str()) {
            Some(at) => items.drain(..=at).for_each(drop),
            None => {
                return error(
                    400,
                    &format!("Item with id '{after}' not found."),
                    Some("after"),
                    None,
                );
            }
        }
    }
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => 20,
        Some(Ok(n)) if (1..=100).contains(&n) => n,
        Some(_) => {
            return error(
                400,
                "Invalid 'limit': integer must be between 1 and 100.",
                Some("limit"),
                Some("integer_out_of_range"),
            );
        }
    };
    let has_more = items.len() > limit;
    items.truncate(limit);
    axum::Json(json!({"object": "list", "data": items,
        "first_id": items.first().map(|i| i["id"].clone()), "last_id": items.last().map(|i| i["id"].clone()),
        "has_more": has_more}))
    .into_response()
}
