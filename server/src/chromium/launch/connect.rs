//! Connecting to a browser: the CDP connection, its browser-level event watchers (downloads,
//! new tabs, crashes, closed tabs), the session's context on a remote, and the viewport check.

use crate::chromium::intercept::{egress, requests};
use crate::chromium::*;

impl ChromiumBrowser {
    /// A new episode on `host`: its own browser context (with its own egress proxy when private
    /// networks are refused), downloads denied, the browser-level watchers, a first tab prepared
    /// and its viewport checked.
    pub(in crate::chromium) async fn open(
        host: Arc<Host>,
        egress_policy: Option<Arc<egress::EgressPolicy>>,
        screenshots: Screenshots,
    ) -> anyhow::Result<Self> {
        let egress = match egress_policy {
            Some(policy) => Some(
                egress::EgressProxy::start(policy)
                    .await
                    .context("cannot start the egress proxy")?,
            ),
            None => None,
        };
        let browser = &host.cdp;
        // Disposed with the episode, or by the browser when our connection drops.
        let params = CreateBrowserContextParams {
            dispose_on_detach: Some(true),
            // Every connection, loopback ones included (`<-loopback>` removes Chromium's
            // implicit bypass), goes through the egress proxy (egress.rs).
            proxy_server: egress.as_ref().map(egress::EgressProxy::url),
            proxy_bypass_list: egress.as_ref().map(|_| "<-loopback>".to_string()),
            ..CreateBrowserContextParams::default()
        };
        // From here on, failing (or being dropped) disposes the context again (`OwnedContext`).
        let owned = host
            .create_context(params)
            .await
            .context("cannot create a browser context")?;
        let context = owned.id().clone();
        let deny_downloads = browser.execute(SetDownloadBehaviorParams {
            behavior: SetDownloadBehaviorBehavior::Deny,
            browser_context_id: Some(context.clone()),
            download_path: None,
            events_enabled: Some(true),
        });
        let mut tasks = Tasks::default();

        let incidents = Arc::new(Mutex::new(Incidents::default()));
        let requests = requests::RequestLog::default();
        let new_tabs = Arc::new(Mutex::new(Vec::new()));
        // Every tab of ours opened or closed: either may have put another tab in front of ours.
        let (tab_changes, tab_changes_seen) = watch::channel(0u64);
        let tab_changes = Arc::new(tab_changes);
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = Some(context.clone());
        // Downloads are denied before the tab can load anything: both commands go at once, and
        // the tab is only navigated once both have answered.
        let (denied, first) = tokio::join!(deny_downloads, browser.new_page(params));
        denied.context("cannot deny downloads")?;
        let first = first.context("cannot open a tab in the browser context")?;
        let load_states: LoadStates = Arc::new(Mutex::new(HashMap::new()));
        let frames: Frames = Arc::new(Mutex::new(HashSet::from([first
            .target_id()
            .as_ref()
            .to_string()])));
        let mut downloads = browser.event_listener::<EventDownloadWillBegin>().await?;
        let sink = incidents.clone();
        let known_frames = frames.clone();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = downloads.next().await {
                // The browser is shared (by episodes, sessions, or a remote's other users): report
                // only downloads started in one of our frames. They are denied in our context
                // either way.
                let ours = known_frames
                    .lock()
                    .is_ok_and(|frames| frames.contains(event.frame_id.as_ref()));
                if !ours {
                    continue;
                }
                if let Ok(mut incidents) = sink.lock() {
                    incidents.downloads_denied.push(clip(&event.url));
                }
            }
        }));

        let mut created = browser.event_listener::<EventTargetCreated>().await?;
        let tabs = new_tabs.clone();
        let mut known: HashSet<TargetId> = HashSet::from([first.target_id().clone()]);
        // Our tabs that are open now, to hold them to MAX_TABS.
        let open_tabs = Arc::new(Mutex::new(HashSet::from([first.target_id().clone()])));
        let own_context = Some(context.clone());
        let own_frames = frames.clone();
        let (open, closer, sink) = (open_tabs.clone(), first.clone(), incidents.clone());
        let opened = tab_changes.clone();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = created.next().await {
                let info = &event.target_info;
                // Other episodes' tabs on a shared browser are not ours to follow.
                let ours = info.browser_context_id == own_context;
                if ours {
                    // Tabs (before we follow them) and out-of-process frames: a frame's id is
                    // its target's.
                    if let Ok(mut frames) = own_frames.lock() {
                        frames.insert(info.target_id.as_ref().to_string());
                    }
                    if info.r#type == "page" {
                        opened.send_modify(|n| *n += 1);
                    }
                }
                if !(ours && info.r#type == "page" && known.insert(info.target_id.clone())) {
                    continue;
                }
                let room = open.lock().is_ok_and(|mut open| {
                    let room = open.len() < MAX_TABS;
                    if room {
                        open.insert(info.target_id.clone());
                    }
                    room
                });
                if room {
                    if let Ok(mut tabs) = tabs.lock() {
                        tabs.push(info.target_id.clone());
                    }
                    continue;
                }
                // A popup flood: every renderer costs memory and CPU, so the extra tab is closed
                // before it loads, and counted.
                if let Ok(mut incidents) = sink.lock() {
                    incidents.tabs_closed += 1;
                }
                let (closer, target) = (closer.clone(), info.target_id.clone());
                tokio::spawn(async move {
                    if let Err(err) = closer.execute(CloseTargetParams::new(target)).await {
                        tracing::debug!("could not close a tab over the limit: {err}");
                    }
                });
            }
        }));

        // Renderer crashes arrive on the browser's own session (Target domain); they are written
        // into the crashed page's load state, where every pending command is watching.
        let mut crashes = browser.event_listener::<EventTargetCrashed>().await?;
        let states = load_states.clone();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = crashes.next().await {
                update_load_state(&states, &event.target_id, |s| s.crashed = true);
            }
        }));

        // So does a tab's closing: a command to a tab being closed may never be answered.
        let mut destroyed = browser.event_listener::<EventTargetDestroyed>().await?;
        let states = load_states.clone();
        let (closed, own_frames) = (tab_changes.clone(), frames.clone());
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = destroyed.next().await {
                let ours = own_frames
                    .lock()
                    .is_ok_and(|frames| frames.contains(event.target_id.as_ref()));
                if ours {
                    closed.send_modify(|n| *n += 1);
                }
                update_load_state(&states, &event.target_id, |s| s.closed = true);
                if let Ok(mut open) = open_tabs.lock() {
                    open.remove(&event.target_id);
                }
            }
        }));

        let clipboard = crate::chromium::page::clipboard::Clipboard::default();
        let current = prepare_page(
            first,
            incidents.clone(),
            requests.clone(),
            &load_states,
            &frames,
            &clipboard,
        )
        .await?;
        let disconnected = host.disconnected.clone();
        let mut chromium = ChromiumBrowser {
            host,
            context: owned,
            _tasks: tasks,
            current,
            previous_pages: Vec::new(),
            archive: None,
            incidents,
            requests,
            new_tabs,
            requests_seen: 0,
            settled_facts: Mutex::new(None),
            prepared: None,
            handed: None,
            spoiled: false,
            disconnected,
            load_states,
            frames,
            egress,
            successor: None,
            screenshots,
            renderer_answered: false,
            frames_misfit: AtomicBool::new(false),
            pointer: None,
            held_buttons: 0,
            dragging: None,
            drag_decided: false,
            clipboard,
            dropdown: None,
            tab_changes: tab_changes_seen,
            setup: Default::default(),
        };
        chromium.verify_viewport().await?;
        Ok(chromium)
    }

    /// Dispose this episode's context (its tabs, cookies, storage, cache, service workers) now
    /// rather than when the connection ends; a host no other episode holds closes with it.
    pub(in crate::chromium) async fn dispose(mut self) {
        // The browser intercepts for no one any more (its next episode may start its own).
        self.stop_interception().await;
        // A successor still opening is stopped (its context disposed as it is dropped); one that
        // is ready is disposed like this one.
        if let Some(successor) = self.successor.take() {
            successor.abort();
            if let Ok(Ok(next)) = successor.await {
                Box::pin(next.dispose()).await;
            }
        }
        self.context.dispose().await;
    }

    /// The seed waits until the page reports exactly 800x600 at scale 1 before navigating.
    pub(in crate::chromium) async fn verify_viewport(&mut self) -> anyhow::Result<()> {
        let wanted = serde_json::json!([VIEWPORT_WIDTH, VIEWPORT_HEIGHT, 1]);
        let mut seen = Value::Null;
        for _ in 0..40 {
            seen = evaluate(
                &self.current.page,
                "[innerWidth, innerHeight, devicePixelRatio]".into(),
                false,
            )
            .await
            .unwrap_or(Value::Null);
            if seen == wanted {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        bail!("the viewport is {seen} instead of {wanted}")
    }

    /// The browser's process id, when we launched it.
    pub fn pid(&self) -> Option<u32> {
        self.host.pid()
    }
}
