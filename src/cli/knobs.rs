//! Everything tunable about this process, read once here at the top — the settings file, then the environment
//! variables that override it — and handed down as data. The library reads no knob itself: a library call's
//! answer depends on its arguments, not on the process it runs in.

use ghola::embed::KernelChoice;
use ghola::index::UpdateOptions;
use ghola::index::render::Neighbour;
use ghola::settings::Settings;

/// How often the freshness loop looks at the history where no file watcher can be had, unless `ghola serve
/// --poll-seconds` says otherwise.
pub const DEFAULT_POLL_SECONDS: u64 = 2;

/// The knobs of one run.
#[derive(Debug, Clone)]
pub struct Knobs {
    /// The settings file with `GHOLA_NOTES_MODEL` and `GHOLA_NOTES_BACKEND` applied (a malformed file is
    /// logged and the defaults used, as the hooks must go on).
    pub settings: Settings,
    /// The base of every index update: publish spacing (`GHOLA_PUBLISH_EVERY`, for tests), the neighbour
    /// setting (`GHOLA_NEIGHBOUR_*`, experiments) and whether the archive is kept (`GHOLA_ARCHIVE`, else
    /// `[archive] enabled`).
    pub update: UpdateOptions,
    /// Bytes the in-memory search set may use (`GHOLA_MEMORY_LIMIT_MB`, else a third of RAM).
    pub memory_limit: u64,
    /// A search response's character bound (`GHOLA_RESPONSE_CHARS`, an experiment knob; never above the
    /// library's bound).
    pub response_chars: usize,
    /// The embedding kernel (`GHOLA_EMBED_KERNEL`: a kernel's name or `auto`; `GHOLA_EMBED_PRECISION=f32`, the
    /// older spelling, asks for the fastest f32 one): for measuring a slower path on a faster machine.
    pub embed_kernel: KernelChoice,
    /// Everything else the environment says (credentials' variables, the `claude` CLI, the calling project and
    /// session, the Hugging Face places, the settings file), read once.
    pub env: ghola::config::Environment,
}

impl Knobs {
    /// The history service's configuration for these knobs and places (`poll_seconds`: how often the freshness
    /// loop looks where no watcher can be had).
    pub fn history(
        &self,
        claude_dir: &std::path::Path,
        index_dir: &std::path::Path,
        model_dir: Option<&std::path::Path>,
    ) -> ghola::service::ServiceConfig {
        ghola::service::ServiceConfig {
            claude_dir: claude_dir.to_path_buf(),
            index_dir: index_dir.to_path_buf(),
            model: self.model(model_dir),
            memory_limit: self.memory_limit,
            embed_kernel: self.embed_kernel,
            update: self.update,
            poll_seconds: DEFAULT_POLL_SECONDS,
            machine: self.machine(),
            remote_sync: (self.settings.remote_sync_minutes > 0)
                .then(|| std::time::Duration::from_secs(self.settings.remote_sync_minutes * 60)),
            ssh_command: self.env.ssh_command.clone(),
            hub_push_every: self
                .env
                .hub_push_seconds
                .map_or(ghola::service::PUSH_EVERY, std::time::Duration::from_secs),
        }
    }

    /// What this machine is called: `machine` in the settings, else its host name.
    pub fn machine(&self) -> String {
        self.settings
            .machine
            .clone()
            .unwrap_or_else(ghola::config::host_machine_name)
    }

    /// Reads the environment, then the settings file it names.
    pub fn read() -> Knobs {
        let env = ghola::config::Environment::read();
        let settings = ghola::settings::load_or_default(&env.settings_file);
        Knobs {
            env,
            ..Self::from(settings, &|name| ghola::config::non_empty_env(name))
        }
    }

    /// Where the model is for this run: `flag` (`--model-dir`), else the environment's places.
    pub fn model(&self, flag: Option<&std::path::Path>) -> ghola::embed::ModelPlaces {
        self.env.model_places(flag)
    }

    /// The knobs from `settings` and the variables `var` gives (tests pass their own).
    pub fn from(mut settings: Settings, var: &dyn Fn(&str) -> Option<String>) -> Knobs {
        let number = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok());
        if let Some(m) = var("GHOLA_NOTES_MODEL") {
            settings.notes_model = m;
        }
        if let Some(b) = var("GHOLA_NOTES_BACKEND") {
            match b.parse() {
                Ok(b) => settings.notes_backend = b,
                Err(e) => tracing::warn!(
                    "GHOLA_NOTES_BACKEND: {e}; using the settings' backend ({})",
                    settings.notes_backend.name()
                ),
            }
        }
        let keep_archive = match var("GHOLA_ARCHIVE") {
            Some(v) => !matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "off" | "false" | "no"
            ),
            None => settings.archive_enabled,
        };
        let defaults = Neighbour::default();
        let neighbour = Neighbour {
            chars: number("GHOLA_NEIGHBOUR_CHARS").map_or(defaults.chars, |n| n as usize),
            weight: var("GHOLA_NEIGHBOUR_WEIGHT")
                .and_then(|v| v.trim().parse::<f32>().ok())
                .filter(|w| w.is_finite() && *w >= 0.0)
                .unwrap_or(defaults.weight),
            below: number("GHOLA_NEIGHBOUR_BELOW").map_or(defaults.below, |n| n as usize),
            call_weight: var("GHOLA_CALL_WEIGHT")
                .and_then(|v| v.trim().parse::<f32>().ok())
                .filter(|w| w.is_finite() && *w >= 0.0)
                .unwrap_or(defaults.call_weight),
            call_words: number("GHOLA_CALL_WORDS").map_or(defaults.call_words, |n| n as usize),
        };
        let update = UpdateOptions {
            publish_every: number("GHOLA_PUBLISH_EVERY")
                .filter(|n| *n > 0)
                .map_or(ghola::index::update::PUBLISH_EVERY, |n| n as usize),
            neighbour,
            keep_archive,
            redact_stored: settings.redact_stored,
            ..UpdateOptions::default()
        };
        let embed_kernel = match var("GHOLA_EMBED_KERNEL") {
            Some(v) if v.trim().eq_ignore_ascii_case("auto") => KernelChoice::Fastest,
            Some(v) => match v.parse() {
                Ok(k) => KernelChoice::Named(k),
                Err(e) => {
                    tracing::warn!("GHOLA_EMBED_KERNEL: {e}; using the fastest this CPU runs");
                    KernelChoice::Fastest
                }
            },
            None if var("GHOLA_EMBED_PRECISION").is_some_and(|v| v.trim() == "f32") => {
                KernelChoice::FastestF32
            }
            None => KernelChoice::Fastest,
        };
        Knobs {
            env: ghola::config::Environment::from_vars(var),
            embed_kernel,
            settings,
            update,
            memory_limit: number("GHOLA_MEMORY_LIMIT_MB")
                .map_or_else(ghola::index::snapshot::default_memory_limit, |mb| {
                    mb.saturating_mul(1024 * 1024)
                }),
            response_chars: number("GHOLA_RESPONSE_CHARS")
                .map_or(ghola::search::response::RESPONSE_CHARS, |n| n as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(vars: &[(&str, &str)], settings: Settings) -> Knobs {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Knobs::from(settings, &|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn without_variables_the_settings_and_library_defaults_hold() {
        let k = knobs(&[], Settings::default());
        assert_eq!(k.update.neighbour, Neighbour::default());
        assert_eq!(k.update.publish_every, ghola::index::update::PUBLISH_EVERY);
        assert!(k.update.keep_archive);
        assert_eq!(k.response_chars, ghola::search::response::RESPONSE_CHARS);
        assert_eq!(k.embed_kernel, KernelChoice::Fastest);
        let off = Settings {
            archive_enabled: false,
            ..Settings::default()
        };
        assert!(!knobs(&[], off).update.keep_archive);
    }

    #[test]
    fn variables_override_the_settings_file() {
        let k = knobs(
            &[
                ("GHOLA_ARCHIVE", "Off"),
                ("GHOLA_PUBLISH_EVERY", "40"),
                ("GHOLA_MEMORY_LIMIT_MB", "3"),
                ("GHOLA_NEIGHBOUR_CHARS", "0"),
                ("GHOLA_NEIGHBOUR_WEIGHT", "2"),
                ("GHOLA_NOTES_MODEL", "m"),
                ("GHOLA_NOTES_BACKEND", "api"),
                ("GHOLA_EMBED_KERNEL", "AVX2"),
            ],
            Settings::default(),
        );
        assert_eq!(
            k.embed_kernel,
            KernelChoice::Named(ghola::embed::Kernel::Avx2)
        );
        let older = knobs(&[("GHOLA_EMBED_PRECISION", "f32")], Settings::default());
        assert_eq!(older.embed_kernel, KernelChoice::FastestF32);
        assert!(!k.update.keep_archive);
        assert_eq!(k.update.publish_every, 40);
        assert_eq!(k.memory_limit, 3 * 1024 * 1024);
        assert_eq!(k.update.neighbour.chars, 0);
        assert_eq!(k.update.neighbour.weight, 2.0);
        assert_eq!(k.settings.notes_model, "m");
        assert_eq!(
            k.settings.notes_backend,
            ghola::settings::BackendChoice::Api
        );
    }

    #[test]
    fn nonsense_values_fall_back_to_the_defaults() {
        let k = knobs(
            &[
                ("GHOLA_PUBLISH_EVERY", "0"),
                ("GHOLA_NEIGHBOUR_WEIGHT", "-1"),
                ("GHOLA_MEMORY_LIMIT_MB", "lots"),
                ("GHOLA_EMBED_KERNEL", "sse9"),
            ],
            Settings::default(),
        );
        assert_eq!(k.embed_kernel, KernelChoice::Fastest);
        assert_eq!(k.update.publish_every, ghola::index::update::PUBLISH_EVERY);
        assert_eq!(k.update.neighbour.weight, Neighbour::default().weight);
        assert_eq!(
            k.memory_limit,
            ghola::index::snapshot::default_memory_limit()
        );
    }
}
