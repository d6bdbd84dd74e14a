//! Detection of bot-verification interstitials (Cloudflare, Vercel), as the seed does it: an agent
//! cannot get past them, so the episode ends with `blocked_by_bot_verification`.

/// True when the page text is a known bot-verification page. The text is normalised (lower case,
/// whitespace collapsed) so line breaks and spacing in the markup do not matter.
pub fn is_bot_verification(page_text: &str) -> bool {
    let text = page_text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let cloudflare = text.contains("cloudflare")
        && (text.contains("verify you are human") || text.contains("verifying you are human"));
    let vercel = text.contains("vercel security checkpoint")
        && (text.contains("verify your browser") || text.contains("verifying your browser"));
    cloudflare || vercel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_cloudflare_and_vercel_pages() {
        assert!(is_bot_verification(
            "Just a moment...\nVerify you are\n   human by completing the action below.\nPerformance & security by Cloudflare"
        ));
        assert!(is_bot_verification(
            "VERIFYING YOU ARE HUMAN. This may take a few seconds. cloudflare"
        ));
        assert!(is_bot_verification(
            "Vercel Security Checkpoint\nVerifying your browser"
        ));
    }

    #[test]
    fn ignores_pages_that_only_mention_one_part() {
        assert!(!is_bot_verification("We use Cloudflare as our CDN."));
        assert!(!is_bot_verification(
            "Please verify you are human (captcha below)"
        ));
        assert!(!is_bot_verification("Vercel Security Checkpoint docs"));
        assert!(!is_bot_verification(""));
    }
}
