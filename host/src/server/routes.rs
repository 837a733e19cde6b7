//! The gateway's fixed routes as one table: the router is made from it, and it lists each
//! method and path with what the route sends upstream, so that a test can hold every route that
//! sends a client's text on to a guard test of its own (`tests/guards_routes.rs`). axum cannot
//! list a router's routes; a route added through this table cannot be missing from the list.

use std::sync::Arc;

use axum::Router;
use axum::handler::Handler;
use axum::routing::MethodRouter;

use crate::state::AppState;

/// What a route sends on to an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    /// Text the client wrote (a prompt, a body, a file, a query): request guards must see it.
    Text,
    /// Nothing the client wrote, and why (answered from the gateway's own state, or only an id).
    Nothing(&'static str),
}

/// One method of one route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub method: &'static str,
    /// As the router matches it (`/v1/files/{id}`); the pass-through routes, served from the
    /// fallback, as `<passthrough.prefix>/{entry}/{*path}`.
    pub path: &'static str,
    pub outbound: Outbound,
}

/// The methods of one path, each with its handler and what it sends upstream.
pub struct Methods {
    router: MethodRouter<Arc<AppState>>,
    listed: Vec<(&'static str, Outbound)>,
}

macro_rules! method {
    ($name:ident, $verb:literal) => {
        /// The route's handler for this method.
        pub fn $name<H, T>(mut self, outbound: Outbound, handler: H) -> Self
        where
            H: Handler<T, Arc<AppState>>,
            T: 'static,
        {
            self.router = self.router.$name(handler);
            self.listed.push(($verb, outbound));
            self
        }
    };
}

/// A path with no method yet.
pub fn methods() -> Methods {
    Methods {
        router: MethodRouter::new(),
        listed: Vec::new(),
    }
}

impl Methods {
    method!(get, "GET");
    method!(post, "POST");
    method!(patch, "PATCH");
    method!(delete, "DELETE");

    /// A layer on every method of the path (`DefaultBodyLimit::disable()`).
    pub fn map(
        mut self,
        f: impl FnOnce(MethodRouter<Arc<AppState>>) -> MethodRouter<Arc<AppState>>,
    ) -> Self {
        self.router = f(self.router);
        self
    }
}

/// The routes so far, and the router made of them.
#[derive(Default)]
pub struct Table {
    router: Router<Arc<AppState>>,
    listed: Vec<Listed>,
}

impl Table {
    /// `path` served by `methods`.
    pub fn route(mut self, path: &'static str, methods: Methods) -> Self {
        self.router = self.router.route(path, methods.router);
        let listed = (methods.listed.into_iter()).map(|(method, outbound)| Listed {
            method,
            path,
            outbound,
        });
        self.listed.extend(listed);
        self
    }

    /// A route the router does not match itself (one its fallback serves), listed.
    pub fn served_by_fallback(mut self, listed: Listed) -> Self {
        self.listed.push(listed);
        self
    }

    pub fn into_parts(self) -> (Router<Arc<AppState>>, Vec<Listed>) {
        (self.router, self.listed)
    }
}
