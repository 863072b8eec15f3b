//! The configured replies: templates filled with an event's values and
//! said in chat.

use super::task::BotTask;

pub(super) fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in pairs {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

impl BotTask {
    pub(super) fn say(&mut self, template: &str, pairs: &[(&str, &str)]) {
        if template.trim().is_empty() {
            return;
        }
        let text = fill(template, pairs);
        if let Some(driver) = &mut self.driver {
            driver.bot_mut().say(&text);
        }
    }

    pub(super) fn top_donors(&self) -> String {
        let Some(kit) = self.driver.as_ref().and_then(|d| d.bot().kit()) else {
            return String::new();
        };
        kit.tally()
            .top_donors_text(&self.behaviour.replies.no_donors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_their_placeholders() {
        assert_eq!(
            fill("Welcome, {nickname}! {nickname}", &[("nickname", "Mina")]),
            "Welcome, Mina! Mina"
        );
        assert_eq!(fill("{top}", &[("top", "1. A 10")]), "1. A 10");
        assert_eq!(fill("{unknown}", &[("nickname", "x")]), "{unknown}");
    }
}
