//! The rules that turn what happened in a step into the observation's `error`, its
//! `metadata.error_detail` and `done`: pure, so every rule is a row of the table test below.
//! The order matters and is the seed's: a lost page first, then bot verification, then what the
//! page tried and was stopped from doing.

use browserenv::ObservationError;

use crate::browser::{Incidents, PageError};

/// What a step produced, as the rules see it.
#[derive(Debug, Clone, Default)]
pub struct StepFacts<'a> {
    /// The action's (or the reset's navigation's) own failure.
    pub action: Option<PageError>,
    /// The screenshot's failure: the page can no longer be observed.
    pub screenshot: Option<PageError>,
    pub incidents: Option<&'a Incidents>,
    /// The page's URL after the step.
    pub url: &'a str,
    /// The page is a "verify you are human" wall.
    pub bot_verification: bool,
    /// The episode was already over (`finish`).
    pub finished: bool,
    pub step_count: u64,
    pub max_steps: u64,
}

/// The observation's verdict on the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepOutcome {
    pub error: Option<ObservationError>,
    pub detail: Option<String>,
    pub done: bool,
}

pub fn judge(facts: &StepFacts) -> StepOutcome {
    let empty = Incidents::default();
    let incidents = facts.incidents.unwrap_or(&empty);
    let mut done = facts.finished;
    // A navigation the action started that failed (a certificate error after a click).
    let mut error = facts.action.clone().or_else(|| {
        incidents
            .navigation_errors
            .first()
            .map(|failure| PageError::NavigationFailed(failure.clone()))
    });
    let mut detail = match &error {
        Some(
            PageError::NavigationFailed(detail)
            | PageError::ActionFailed(detail)
            | PageError::Disconnected(detail),
        ) => Some(detail.clone()),
        _ => None,
    };
    if let Some(killed) = &incidents.renderer_killed {
        detail = Some(killed.clone());
    }
    if let Some(failure) = &facts.screenshot {
        // The seed: no picture means the renderer is gone; end the episode.
        done = true;
        error = Some(match failure {
            PageError::RendererCrashed | PageError::Disconnected(_) => failure.clone(),
            _ => PageError::RendererTimeout,
        });
    }
    if error.as_ref().is_some_and(PageError::ends_episode) {
        done = true;
    }
    let mut code = error.as_ref().map(PageError::kind);
    // A refused connection to the page's own host (not to one of its subresources').
    let page_authority = url::Url::parse(facts.url).ok().and_then(|url| {
        Some(format!(
            "{}:{}",
            url.host_str()?
                .trim_start_matches('[')
                .trim_end_matches(']'),
            url.port_or_known_default()?
        ))
    });
    let refused_page = incidents
        .network_refused
        .kept
        .iter()
        .find(|(authority, _)| Some(authority) == page_authority.as_ref())
        .filter(|_| matches!(error, None | Some(PageError::NavigationFailed(_))));
    if code.is_none() || !done {
        if facts.bot_verification {
            done = true;
            code = Some(ObservationError::BlockedByBotVerification);
        } else if let Some((_, reason)) = refused_page {
            // The page itself was refused (reset, a link, a redirect): its navigation failed
            // because it was stopped.
            code = Some(ObservationError::NavigationBlocked);
            detail = Some(reason.clone());
        } else if code.is_none() && !incidents.navigations_blocked.is_empty() {
            code = Some(ObservationError::NavigationBlocked);
        } else if code.is_none() && !incidents.downloads_denied.is_empty() {
            code = Some(ObservationError::DownloadBlocked);
        }
    }
    if facts.step_count >= facts.max_steps {
        done = true;
    }
    StepOutcome {
        error: code,
        detail,
        done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ObservationError as E;

    fn incidents(edit: impl FnOnce(&mut Incidents)) -> Incidents {
        let mut incidents = Incidents::default();
        edit(&mut incidents);
        incidents
    }

    #[test]
    fn the_rules_in_order() {
        let blocked_link = incidents(|i| i.navigations_blocked.push("javascript:x".into()));
        let download = incidents(|i| i.downloads_denied.push("http://a/x.bin".into()));
        let cert = incidents(|i| {
            i.navigation_errors
                .push("net::ERR_CERT_DATE_INVALID".into())
        });
        let refused = incidents(|i| {
            i.network_refused.push((
                "10.0.0.5:80".into(),
                "10.0.0.5:80 resolves to 10.0.0.5".into(),
            ))
        });
        let killed = incidents(|i| i.renderer_killed = Some("over the limit".into()));
        let failed = || Some(PageError::NavigationFailed("net::ERR_TUNNEL".into()));
        let base = StepFacts {
            url: "http://a.example/",
            step_count: 1,
            max_steps: 20,
            ..StepFacts::default()
        };
        type Row<'a> = (&'a str, StepFacts<'a>, Option<E>, Option<&'a str>, bool);
        let rows: Vec<Row> = vec![
            ("nothing happened", base.clone(), None, None, false),
            (
                "a busy page",
                StepFacts {
                    action: Some(PageError::ActionTimeout),
                    ..base.clone()
                },
                Some(E::ActionTimeout),
                None,
                false,
            ),
            (
                "no screenshot ends the episode",
                StepFacts {
                    screenshot: Some(PageError::ActionTimeout),
                    ..base.clone()
                },
                Some(E::RendererTimeout),
                None,
                true,
            ),
            (
                "a crash stays a crash, with the memory limit as its reason",
                StepFacts {
                    screenshot: Some(PageError::RendererCrashed),
                    incidents: Some(&killed),
                    ..base.clone()
                },
                Some(E::RendererCrashed),
                Some("over the limit"),
                true,
            ),
            (
                "a failed navigation after a click",
                StepFacts {
                    incidents: Some(&cert),
                    ..base.clone()
                },
                Some(E::NavigationFailed),
                Some("net::ERR_CERT_DATE_INVALID"),
                false,
            ),
            (
                "bot verification wins over an error and ends",
                StepFacts {
                    action: Some(PageError::ActionTimeout),
                    bot_verification: true,
                    ..base.clone()
                },
                Some(E::BlockedByBotVerification),
                None,
                true,
            ),
            (
                "a stopped link",
                StepFacts {
                    incidents: Some(&blocked_link),
                    ..base.clone()
                },
                Some(E::NavigationBlocked),
                None,
                false,
            ),
            (
                "an action error wins over a stopped link",
                StepFacts {
                    action: Some(PageError::ActionTimeout),
                    incidents: Some(&blocked_link),
                    ..base.clone()
                },
                Some(E::ActionTimeout),
                None,
                false,
            ),
            (
                "a denied download",
                StepFacts {
                    incidents: Some(&download),
                    ..base.clone()
                },
                Some(E::DownloadBlocked),
                None,
                false,
            ),
            (
                "the page's own host refused: blocked, with why",
                StepFacts {
                    action: failed(),
                    incidents: Some(&refused),
                    url: "http://10.0.0.5/",
                    ..base.clone()
                },
                Some(E::NavigationBlocked),
                Some("10.0.0.5:80 resolves to 10.0.0.5"),
                false,
            ),
            (
                "a subresource refused: no error",
                StepFacts {
                    incidents: Some(&refused),
                    ..base.clone()
                },
                None,
                None,
                false,
            ),
            (
                "the step limit ends the episode",
                StepFacts {
                    step_count: 20,
                    ..base.clone()
                },
                None,
                None,
                true,
            ),
            (
                "finish ends it",
                StepFacts {
                    finished: true,
                    ..base.clone()
                },
                None,
                None,
                true,
            ),
        ];
        for (why, facts, error, detail, done) in rows {
            let outcome = judge(&facts);
            assert_eq!(
                outcome,
                StepOutcome {
                    error,
                    detail: detail.map(str::to_string),
                    done
                },
                "{why}"
            );
        }
    }
}
