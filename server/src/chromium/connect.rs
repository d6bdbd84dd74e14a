//! Connecting to a browser: the CDP connection, its browser-level event watchers (downloads,
//! new tabs, crashes, closed tabs), the session's context on a remote, and the viewport check.

use super::*;

impl ChromiumBrowser {
    pub(super) async fn connect(
        endpoint: Endpoint,
        ignore_https_errors: bool,
    ) -> anyhow::Result<Self> {
        let config = HandlerConfig {
            // We set the viewport ourselves: chromiumoxide's emulation also turns on touch emulation.
            viewport: None,
            request_timeout: Duration::from_secs(30),
            // chromiumoxide's default tells every page to ignore certificate errors.
            ignore_https_errors,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) =
            CdpBrowser::connect_with_config(endpoint.websocket_url(), config)
                .await
                .context("cannot connect to chromium's DevTools endpoint")?;
        let disconnected = Arc::new(AtomicBool::new(false));
        let gone = disconnected.clone();
        // From here on, failing (or being cancelled by the launch timeout) drops `tasks`, which
        // closes the CDP socket: nothing is left connected, and a remote context is disposed.
        let mut tasks = Tasks::default();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                match event {
                    // The socket is gone (the browser died): stop, so pending commands fail now
                    // instead of at their timeout.
                    Err(CdpError::Ws(err)) => {
                        tracing::debug!("cdp connection lost: {err}");
                        break;
                    }
                    // Single messages chromiumoxide could not decode (Chromium 156 renamed a
                    // Network field); the connection goes on.
                    Err(err) => tracing::trace!("cdp handler: {err}"),
                    Ok(()) => {}
                }
            }
            gone.store(true, Ordering::SeqCst);
        }));

        // On a remote browser, this session's own context: cookies, storage and cache as private
        // as a fresh profile, and disposed with the session (also if our connection just drops).
        let context = match endpoint {
            Endpoint::Local(_) => None,
            Endpoint::Remote(_) => {
                let params = CreateBrowserContextParams {
                    dispose_on_detach: Some(true),
                    ..CreateBrowserContextParams::default()
                };
                Some(
                    browser
                        .create_browser_context(params)
                        .await
                        .context("cannot create a browser context")?,
                )
            }
        };
        browser
            .execute(SetDownloadBehaviorParams {
                behavior: SetDownloadBehaviorBehavior::Deny,
                browser_context_id: context.clone(),
                download_path: None,
                events_enabled: Some(true),
            })
            .await
            .context("cannot deny downloads")?;

        let incidents = Arc::new(Mutex::new(Incidents::default()));
        let new_tabs = Arc::new(Mutex::new(Vec::new()));
        let first = match &context {
            Some(context) => {
                let mut params = CreateTargetParams::new("about:blank");
                params.browser_context_id = Some(context.clone());
                browser
                    .new_page(params)
                    .await
                    .context("cannot open a tab in the browser context")?
            }
            None => first_page(&browser).await?,
        };
        let load_states: LoadStates = Arc::new(Mutex::new(HashMap::new()));
        let frames: Frames = Arc::new(Mutex::new(HashSet::from([first
            .target_id()
            .as_ref()
            .to_string()])));
        let mut downloads = browser.event_listener::<EventDownloadWillBegin>().await?;
        let sink = incidents.clone();
        let known_frames = frames.clone();
        let shared = context.is_some();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = downloads.next().await {
                // A remote browser is shared: report only downloads started in one of our frames.
                // They are denied in our context either way.
                let ours = !shared
                    || known_frames
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
        let own_context = context.clone();
        let own_frames = frames.clone();
        let (open, closer, sink) = (open_tabs.clone(), first.clone(), incidents.clone());
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = created.next().await {
                let info = &event.target_info;
                // Other sessions' tabs on a shared remote browser are not ours to follow.
                let ours = own_context.is_none() || info.browser_context_id == own_context;
                if ours {
                    // Tabs (before we follow them) and out-of-process frames: a frame's id is
                    // its target's.
                    if let Ok(mut frames) = own_frames.lock() {
                        frames.insert(info.target_id.as_ref().to_string());
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
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = destroyed.next().await {
                update_load_state(&states, &event.target_id, |s| s.closed = true);
                if let Ok(mut open) = open_tabs.lock() {
                    open.remove(&event.target_id);
                }
            }
        }));

        let current = prepare_page(first, incidents.clone(), &load_states, &frames).await?;
        let mut chromium = ChromiumBrowser {
            browser,
            _tasks: tasks,
            current,
            previous_pages: Vec::new(),
            incidents,
            new_tabs,
            last_action: Instant::now(),
            expect_navigation: false,
            disconnected,
            load_states,
            frames,
            context,
            egress: None,
            endpoint,
        };
        chromium.verify_viewport().await?;
        Ok(chromium)
    }

    /// The seed waits until the page reports exactly 800x600 at scale 1 before navigating.
    pub(super) async fn verify_viewport(&mut self) -> anyhow::Result<()> {
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
        match &self.endpoint {
            Endpoint::Local(process) => Some(process.pid()),
            Endpoint::Remote(_) => None,
        }
    }
}

/// The tab Chromium opened at start (about:blank), or a new one.
pub(super) async fn first_page(browser: &CdpBrowser) -> anyhow::Result<Page> {
    for _ in 0..40 {
        if let Some(page) = browser.pages().await?.into_iter().next() {
            return Ok(page);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(browser.new_page("about:blank").await?)
}
