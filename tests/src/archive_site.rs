//! A site that changes, for the archive tests: what real sites do that a replay must get right. Its
//! pages ask the same URL several times (a counter that answers anew each time), add a timestamp
//! to defeat caches, redirect, set a cookie from a posted form, show it back, open a popup, hold a
//! frame of another origin and run a worker. Its `edition` can be turned, as a site changes
//! between December and March.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

#[derive(Default)]
struct Site {
    edition: AtomicU32,
    counter: AtomicU64,
    /// Requests served, by anyone: a replay must add none.
    served: AtomicU64,
}

/// The running site; dropped, it stops (as a site that went away).
pub struct ArchiveSite {
    pub addr: SocketAddr,
    site: Arc<Site>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ArchiveSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where the pages put what the tests click (page pixels).
pub const GO_LINK: (i64, i64) = (100, 215);
pub const NAME_FIELD: (i64, i64) = (100, 265);
pub const POPUP_LINK: (i64, i64) = (100, 315);

impl ArchiveSite {
    pub async fn start() -> ArchiveSite {
        let site = Arc::new(Site {
            edition: AtomicU32::new(1),
            ..Site::default()
        });
        let app = Router::new()
            .route("/", get(home))
            .route("/style.css", get(style))
            .route("/pixel.svg", get(pixel))
            .route("/counter", get(counter))
            .route("/data.json", get(data))
            .route("/go", get(go))
            .route("/landed", get(landed))
            .route("/login", post(login))
            .route("/whoami", get(whoami))
            .route("/popup.html", get(popup))
            .route("/parts.html", get(parts))
            .route("/password.html", get(password))
            .route("/frame.html", get(frame))
            .route("/worker.js", get(worker))
            .route("/from-frame", get(|| async { "from the frame" }))
            .route("/from-worker", get(|| async { "from the worker" }))
            .route("/clock.html", get(clock))
            .route("/big.bin", get(big))
            .layer(axum::middleware::from_fn_with_state(site.clone(), count))
            .with_state(site.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ArchiveSite { addr, site, task }
    }

    /// `http://127.0.0.1:PORT/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }

    /// The site changes: every page says so.
    pub fn set_edition(&self, edition: u32) {
        self.site.edition.store(edition, Ordering::SeqCst);
    }

    /// Requests the site has served.
    pub fn served(&self) -> u64 {
        self.site.served.load(Ordering::SeqCst)
    }
}

async fn count(
    State(site): State<Arc<Site>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    site.served.fetch_add(1, Ordering::SeqCst);
    next.run(request).await
}

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{title}</title>\
         <link rel=stylesheet href=/style.css></head><body>{body}</body></html>"
    ))
}

async fn home(State(site): State<Arc<Site>>) -> Html<String> {
    let edition = site.edition.load(Ordering::SeqCst);
    page(
        &format!("Edition {edition}"),
        &format!(
            "<h1>Harbor news, edition {edition}</h1><img src=/pixel.svg width=40 height=40>\
             <p id=counts>counting</p><p id=data>no data</p>\
             <a id=go href=/go style='position:absolute;left:20px;top:200px'>Go somewhere</a>\
             <form method=post action=/login style='position:absolute;left:20px;top:250px'>\
             <input name=name id=name style='width:160px'></form>\
             <a id=popup href=/popup.html target=_blank style='position:absolute;left:20px;top:300px'>Open the popup</a>\
             <script>\
             (async () => {{\
               const counts = [];\
               for (let i = 0; i < 3; i++) counts.push(await (await fetch('/counter')).text());\
               document.getElementById('counts').textContent = counts.join(', ');\
               const data = await (await fetch('/data.json?_=' + Date.now())).json();\
               document.getElementById('data').textContent = data.text;\
             }})();\
             </script>"
        ),
    )
}

/// A page with a frame of another site (a process of its own) and a worker, each asking for
/// more, and a link to a popup.
async fn parts(headers: HeaderMap) -> Html<String> {
    // The frame comes from the other loopback name: another site.
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .replace("127.0.0.1", "localhost");
    page(
        "Parts",
        &format!(
            "<h1>Parts</h1><p id=worker>no worker</p>\
             <a id=popup href=/popup.html target=_blank style='position:absolute;left:20px;top:300px'>Open the popup</a>\
             <iframe src='http://{host}/frame.html' style='position:absolute;left:400px;top:200px;width:300px;height:80px'></iframe>\
             <script>\
             const worker = new Worker('/worker.js');\
             worker.onmessage = (e) => {{ document.getElementById('worker').textContent = e.data; }};\
             </script>"
        ),
    )
}

/// The form of the home page, with a password field: what is typed there is a secret.
async fn password() -> Html<String> {
    page(
        "Password",
        "<form method=post action=/login style='position:absolute;left:20px;top:250px'>\
         <input type=password name=name id=name style='width:160px'></form>",
    )
}

async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css")],
        "body { font: 16px sans-serif; margin: 20px; background: #fdf6e3; } h1 { color: #268bd2; }",
    )
}

async fn pixel() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        "<svg xmlns='http://www.w3.org/2000/svg' width='40' height='40'><rect width='40' height='40' fill='#cb4b16'/></svg>",
    )
}

async fn counter(State(site): State<Arc<Site>>) -> String {
    format!("count {}", site.counter.fetch_add(1, Ordering::SeqCst) + 1)
}

async fn data(State(site): State<Arc<Site>>) -> impl IntoResponse {
    let edition = site.edition.load(Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "application/json")],
        format!("{{\"text\": \"data of edition {edition}\"}}"),
    )
}

async fn go() -> impl IntoResponse {
    (StatusCode::FOUND, [(header::LOCATION, "/landed")])
}

async fn landed(State(site): State<Arc<Site>>) -> Html<String> {
    let edition = site.edition.load(Ordering::SeqCst);
    page("Landed", &format!("<h1>Landed on edition {edition}</h1>"))
}

async fn login(body: String) -> impl IntoResponse {
    let name = body
        .split('&')
        .find_map(|pair| pair.strip_prefix("name="))
        .unwrap_or("")
        .replace('+', " ");
    let expires = "Expires=Wed, 01 Jan 2200 00:00:00 GMT";
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/whoami".to_string()),
            (header::SET_COOKIE, format!("who={name}; Path=/; {expires}")),
        ],
    )
}

async fn whoami(headers: HeaderMap) -> Html<String> {
    let who = headers
        .get(header::COOKIE)
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split("; ").find_map(|p| p.strip_prefix("who=")))
        .unwrap_or("nobody")
        .to_string();
    page("Who", &format!("<h1>You are {who}</h1>"))
}

async fn popup(State(site): State<Arc<Site>>) -> Html<String> {
    let edition = site.edition.load(Ordering::SeqCst);
    page("Popup", &format!("<h1>The popup of edition {edition}</h1>"))
}

async fn frame() -> Html<String> {
    Html(
        "<body style='margin:0;background:#eee8d5'><p id=f>frame waiting</p><script>\
         fetch('/from-frame').then(r => r.text()).then(t => { document.getElementById('f').textContent = t; });\
         </script></body>"
            .into(),
    )
}

async fn worker() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript")],
        "fetch('/from-worker').then(r => r.text()).then(t => postMessage(t));",
    )
}

/// A page whose pixels depend on the clock and on chance.
async fn clock() -> Html<String> {
    page(
        "Clock",
        "<p id=date></p><p id=random></p><p id=perf></p><script>\
         document.getElementById('date').textContent = new Date().toISOString();\
         document.getElementById('random').textContent = String(Math.random());\
         document.getElementById('perf').textContent = String(performance.now() > 0);\
         </script>",
    )
}

/// Three MiB of body, for the archive's bounds.
async fn big() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        vec![b'x'; 3 << 20],
    )
}
