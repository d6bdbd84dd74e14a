//! The error codes of the campaign's routes, each with its HTTP status: the one list the routes
//! answer from, docs/campaigns.md's table ("Error codes") and the routes' OpenAPI responses are held
//! to (the tests below).

use axum::http::StatusCode;

use browserenv_collect::campaign::CampaignError;

use crate::api_error::ApiError;

/// Why a campaign request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    NoCampaign,
    InvalidRequest,
    InvalidName,
    PersonRequired,
    NotYourName,
    PersonNotAllowed,
    NotYourLease,
    OwnDemonstration,
    DemonstrationNotFound,
    LeaseEnded,
    EpisodeNotEnded,
    NotInYourHands,
    ReviewedAlready,
    DuplicateEpisode,
    TooManyPeople,
    CampaignLogFailed,
}

impl Code {
    /// Every code, in the order docs/campaigns.md lists them.
    pub const ALL: [Code; 16] = [
        Code::NoCampaign,
        Code::InvalidRequest,
        Code::InvalidName,
        Code::PersonRequired,
        Code::NotYourName,
        Code::PersonNotAllowed,
        Code::NotYourLease,
        Code::OwnDemonstration,
        Code::DemonstrationNotFound,
        Code::LeaseEnded,
        Code::EpisodeNotEnded,
        Code::NotInYourHands,
        Code::ReviewedAlready,
        Code::DuplicateEpisode,
        Code::TooManyPeople,
        Code::CampaignLogFailed,
    ];

    /// Its name on the wire (`code` of the error body).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::NoCampaign => "NO_CAMPAIGN",
            Code::InvalidRequest => "INVALID_REQUEST",
            Code::InvalidName => "INVALID_NAME",
            Code::PersonRequired => "PERSON_REQUIRED",
            Code::NotYourName => "NOT_YOUR_NAME",
            Code::PersonNotAllowed => "PERSON_NOT_ALLOWED",
            Code::NotYourLease => "NOT_YOUR_LEASE",
            Code::OwnDemonstration => "OWN_DEMONSTRATION",
            Code::DemonstrationNotFound => "DEMONSTRATION_NOT_FOUND",
            Code::LeaseEnded => "LEASE_ENDED",
            Code::EpisodeNotEnded => "EPISODE_NOT_ENDED",
            Code::NotInYourHands => "NOT_IN_YOUR_HANDS",
            Code::ReviewedAlready => "REVIEWED_ALREADY",
            Code::DuplicateEpisode => "DUPLICATE_EPISODE",
            Code::TooManyPeople => "TOO_MANY_PEOPLE",
            Code::CampaignLogFailed => "CAMPAIGN_LOG_FAILED",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Code::NoCampaign | Code::DemonstrationNotFound => StatusCode::NOT_FOUND,
            Code::InvalidRequest | Code::InvalidName => StatusCode::UNPROCESSABLE_ENTITY,
            Code::PersonRequired
            | Code::NotYourName
            | Code::PersonNotAllowed
            | Code::NotYourLease
            | Code::OwnDemonstration => StatusCode::FORBIDDEN,
            Code::LeaseEnded
            | Code::EpisodeNotEnded
            | Code::NotInYourHands
            | Code::ReviewedAlready
            | Code::DuplicateEpisode
            | Code::TooManyPeople => StatusCode::CONFLICT,
            Code::CampaignLogFailed => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error answer of this code.
    pub fn error(self, detail: impl Into<String>) -> ApiError {
        ApiError::new(self.status(), self.as_str(), detail)
    }

    /// The code of a refusal of the campaign's rules.
    pub fn of(err: &CampaignError) -> Code {
        match err {
            CampaignError::NoLease(_) => Code::LeaseEnded,
            CampaignError::NotEnded(_) => Code::EpisodeNotEnded,
            CampaignError::NoDemonstration(_) => Code::DemonstrationNotFound,
            CampaignError::OwnDemonstration(_) => Code::OwnDemonstration,
            CampaignError::BadName => Code::InvalidName,
            CampaignError::NotYours(_) => Code::NotYourLease,
            // Met by a session's reset and steps (the WebSocket says it in words), never by a
            // route: no route works under a session.
            CampaignError::OtherSession(_) => Code::NotYourLease,
            CampaignError::NotInHand(_) => Code::NotInYourHands,
            CampaignError::Reviewed(_) => Code::ReviewedAlready,
            CampaignError::Duplicate(_) => Code::DuplicateEpisode,
            CampaignError::TooManyPeople => Code::TooManyPeople,
            CampaignError::Log(_) => Code::CampaignLogFailed,
        }
    }
}

/// A refusal of the campaign's rules as an HTTP answer.
pub fn refused(err: CampaignError) -> ApiError {
    Code::of(&err).error(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes an answer's description names: the words in backticks that are all capitals.
    fn named_codes(text: &str) -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| {
                word.len() > 2 && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
            .map(str::to_string)
            .collect()
    }

    /// docs/campaigns.md's table lists exactly these codes, in this order, with their statuses.
    #[test]
    fn the_documented_table_is_this_list() {
        let doc = include_str!("../../../docs/campaigns.md");
        let table = doc
            .split("\n## Error codes\n")
            .nth(1)
            .expect("docs/campaigns.md has the error code table");
        let mut listed = Vec::new();
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells[1].trim_matches('`');
            if code == "Code" || code.starts_with("---") {
                continue;
            }
            let known = Code::ALL.into_iter().find(|c| c.as_str() == code);
            let Some(known) = known else {
                panic!("docs/campaigns.md lists {code:?}, which is not a campaign code");
            };
            assert_eq!(
                cells[2],
                known.status().as_u16().to_string(),
                "docs/campaigns.md's status of {code}"
            );
            listed.push(known);
        }
        assert_eq!(listed, Code::ALL.to_vec(), "same codes, same order");
    }

    /// The routes' OpenAPI answers name only codes of this list (or the server's own
    /// `UNAUTHORIZED` and `EXECUTION_ERROR`), each with its status, and every code is named by a
    /// route of the campaign's or refuses a person elsewhere.
    #[test]
    fn the_routes_answer_with_these_codes() {
        let (_, api) = crate::routes::campaign::routes::<()>(None).split_for_parts();
        let mut named = std::collections::BTreeSet::new();
        for (path, item) in &api.paths.paths {
            let operations = [&item.get, &item.post].into_iter().flatten();
            for operation in operations {
                for (status, response) in &operation.responses.responses {
                    let utoipa::openapi::RefOr::T(response) = response else {
                        continue;
                    };
                    for code in named_codes(&response.description) {
                        if ["UNAUTHORIZED", "EXECUTION_ERROR"].contains(&code.as_str()) {
                            continue;
                        }
                        let known = Code::ALL.into_iter().find(|c| c.as_str() == code);
                        let Some(known) = known else {
                            panic!("{path} answers {code}, which is not a campaign code");
                        };
                        assert_eq!(
                            status,
                            &known.status().as_u16().to_string(),
                            "{path}: {code}"
                        );
                        named.insert(code);
                    }
                }
            }
        }
        // Answered on the other routes, to a person's token (`caller.rs`).
        named.insert(Code::PersonNotAllowed.as_str().to_string());
        for code in Code::ALL {
            assert!(
                named.contains(code.as_str()),
                "no route says it answers {}",
                code.as_str()
            );
        }
    }
}
