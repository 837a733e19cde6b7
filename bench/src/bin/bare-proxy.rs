//! The floor any gateway pays: a reverse proxy with no logic, the same two loopback hops as the
//! gateway (a hyper server, a pooled hyper client), every request passed to one upstream as it
//! came and every answer streamed back as it comes. gatebench measures each gateway row against
//! it in the same run, a steadier yardstick than the upstream called directly.
//!
//! `bare-proxy UPSTREAM_ADDR`: listens on a free port of 127.0.0.1, prints `listening <addr>`,
//! serves until killed. The runtime is tokio's multi-threaded one, as the gateway's is.

#![allow(clippy::print_stdout)]

use std::convert::Infallible;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = BoxBody<Bytes, hyper::Error>;

async fn forward(
    client: Client<HttpConnector, Incoming>,
    upstream: &str,
    mut request: Request<Incoming>,
) -> Response<Body> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    match Uri::try_from(format!("http://{upstream}{path}")) {
        Ok(uri) => *request.uri_mut() = uri,
        Err(_) => return bad_gateway(),
    }
    match client.request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(_) => bad_gateway(),
    }
}

fn bad_gateway() -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::new())
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let upstream: &'static str = std::env::args()
        .nth(1)
        .context("bare-proxy UPSTREAM_ADDR")?
        .leak();
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    println!("listening {}", listener.local_addr()?);
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        let client = client.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let client = client.clone();
                async move { Ok::<_, Infallible>(forward(client, upstream, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}
