//! Persistence: a restart without the last token pair needs new DJ
//! consent, so every new pair is saved the moment the bot hands it out
//! ([`onair::Action::PersistTokens`]); the configured kit's memory is saved
//! the same way ([`onair::Action::PersistState`]), so a restart greets
//! nobody twice. [`FileStore`] writes either versioned file atomically with
//! mode 0600 (one store per file); [`MemoryStore`] is for tests.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use onair::kit::{KitState, StateError};
use onair::{LoadError, Tokens};

/// Why a token or state store failed.
///
/// A [`FileStore`] answers with [`StoreError::File`], whose `Display` is one
/// line for the person running the bot: the file, what is wrong with it and
/// what to do:
///
/// ```
/// use onair_tokio::{FileStore, TokenStore};
///
/// let dir = std::env::temp_dir().join(format!("onair-doc-bad-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("tokens.json");
/// std::fs::write(&path, "garbage")?;
/// let error = FileStore::new(&path).load().unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     format!(
///         "{}: not a token file (stored tokens are not valid (error at line 1 column 1)); \
///          restore a good copy, or delete it and give the bot a new consent code",
///         path.display()
///     )
/// );
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing the store failed.
    #[error("token store: {0}")]
    Io(#[from] io::Error),
    /// The stored pair is not a token file this version reads.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The stored state is not kit state this version reads.
    #[error(transparent)]
    State(#[from] StateError),
    /// A [`FileStore`]'s file could not be read, written or deleted, or
    /// holds something else: `message` names the file, what is wrong and
    /// what to do (never the file's content).
    #[error("{message}")]
    File {
        /// The file.
        path: PathBuf,
        /// The whole line: the file, the problem, the remedy.
        message: String,
        /// The underlying error ([`StoreError::Io`], [`StoreError::Load`]
        /// or [`StoreError::State`]).
        problem: Box<StoreError>,
    },
}

/// Which file of a [`FileStore`] and what was done with it, for
/// [`StoreError::File`].
#[derive(Clone, Copy)]
enum Doing {
    LoadTokens,
    LoadState,
    Save,
    Delete,
}

impl StoreError {
    /// `problem` with `path` as a [`StoreError::File`], worded for the
    /// person running the bot.
    fn in_file(path: &Path, doing: Doing, problem: StoreError) -> StoreError {
        let shown = path.display();
        let message = match (&problem, doing) {
            (StoreError::Load(why), _) => format!(
                "{shown}: not a token file ({why}); restore a good copy, or delete it and give \
                 the bot a new consent code"
            ),
            (StoreError::State(why), _) => format!(
                "{shown}: not a kit state file ({why}); restore a good copy, or delete it (the \
                 bot then starts with an empty memory and may greet people again)"
            ),
            (_, Doing::LoadTokens | Doing::LoadState) => {
                format!("{shown}: cannot read it ({problem}); check the path and its permissions")
            }
            (_, Doing::Save) => format!(
                "{shown}: cannot write it ({problem}); check the folder, its permissions and the \
                 free space"
            ),
            (_, Doing::Delete) => format!("{shown}: cannot delete it ({problem})"),
        };
        StoreError::File {
            path: path.to_owned(),
            message,
            problem: Box::new(problem),
        }
    }
}

/// Where the bot's tokens live between runs.
pub trait TokenStore: Send + Sync {
    /// The saved pair, if there is one.
    fn load(&self) -> Result<Option<Tokens>, StoreError>;
    /// Saves a new pair, replacing the old one.
    fn save(&self, tokens: &Tokens) -> Result<(), StoreError>;
    /// Forgets the pair (after a revocation).
    fn clear(&self) -> Result<(), StoreError>;
}

/// What a [`RefreshGate`] answers before the bot refreshes its pair.
#[derive(Debug)]
pub enum BeforeRefresh {
    /// The bot's pair is the latest one stored: refresh it.
    Proceed,
    /// Another process already refreshed and stored this newer pair: the bot
    /// takes it instead ([`onair::Bot::adopt_tokens`]) and sends nothing, so
    /// the spent refresh token is never sent again.
    Newer(Tokens),
}

/// The future a [`RefreshGate`] returns.
pub type GateFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<BeforeRefresh, StoreError>> + Send>>;

/// Consulted before every refresh when several processes share one
/// integration's tokens (replicas of a service over one database): one
/// refresh per token between them. Answer [`BeforeRefresh::Newer`] with the
/// stored pair when its generation is above `generation` (the bot's); an
/// error fails the refresh as a transport error would (the bot retries
/// after a backoff).
///
/// ```
/// use onair_tokio::{BeforeRefresh, GateFuture, RefreshGate};
///
/// /// Never anyone else: always refresh.
/// struct Alone;
/// impl RefreshGate for Alone {
///     fn before_refresh(&self, _generation: u64) -> GateFuture {
///         Box::pin(async { Ok(BeforeRefresh::Proceed) })
///     }
/// }
/// ```
pub trait RefreshGate: Send + Sync {
    /// What to do before refreshing the pair of `generation`.
    fn before_refresh(&self, generation: u64) -> GateFuture;
}

/// Where the configured kit's memory lives between runs.
pub trait StateStore: Send + Sync {
    /// The saved state, if there is one.
    fn load_state(&self) -> Result<Option<KitState>, StoreError>;
    /// Saves the state, replacing the old one.
    fn save_state(&self, state: &KitState) -> Result<(), StoreError>;
}

/// The token file on disk: the core's versioned JSON
/// ([`Tokens::to_json`]), written to a temporary file beside it, flushed
/// and renamed over it, so a crash leaves the old pair or the new one, never
/// half of either. Created with mode 0600 on Unix: it holds secrets.
///
/// ```
/// use onair_tokio::{FileStore, TokenStore};
///
/// let dir = std::env::temp_dir().join(format!("onair-doc-{}", std::process::id()));
/// let store = FileStore::new(dir.join("tokens.json"));
/// assert!(store.load()?.is_none()); // no file yet
/// # let _ = std::fs::remove_dir_all(&dir);
/// # Ok::<(), onair_tokio::StoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// A store at `path` (its folder is created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl TokenStore for FileStore {
    fn load(&self) -> Result<Option<Tokens>, StoreError> {
        let read = match fs::read(&self.path) {
            Ok(bytes) => Tokens::from_json(&bytes)
                .map(Some)
                .map_err(StoreError::from),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        };
        read.map_err(|e| StoreError::in_file(&self.path, Doing::LoadTokens, e))
    }

    fn save(&self, tokens: &Tokens) -> Result<(), StoreError> {
        self.write(tokens.to_json().as_bytes())
    }

    fn clear(&self) -> Result<(), StoreError> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::in_file(&self.path, Doing::Delete, e.into())),
        }
    }
}

impl StateStore for FileStore {
    fn load_state(&self) -> Result<Option<KitState>, StoreError> {
        let read = match fs::read(&self.path) {
            Ok(bytes) => KitState::from_json(&bytes)
                .map(Some)
                .map_err(StoreError::from),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        };
        read.map_err(|e| StoreError::in_file(&self.path, Doing::LoadState, e))
    }

    fn save_state(&self, state: &KitState) -> Result<(), StoreError> {
        self.write(state.to_json().as_bytes())
    }
}

impl FileStore {
    /// Writes `bytes` beside the file, flushed, then renamed over it.
    fn write(&self, bytes: &[u8]) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)
                .map_err(|e| StoreError::in_file(&self.path, Doing::Save, e.into()))?;
        }
        let mut tmp_name = self.path.file_name().unwrap_or_default().to_owned();
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = self.path.with_file_name(tmp_name);
        let mut options = fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = (|| {
            let mut file = options.open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written.map_err(|e| StoreError::in_file(&self.path, Doing::Save, e.into()))
    }
}

/// A store in memory (tests, or a process that keeps tokens elsewhere).
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<Option<Tokens>>, Mutex<Option<KitState>>);

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self) -> Result<Option<Tokens>, StoreError> {
        Ok(self.0.lock().map(|t| t.clone()).unwrap_or(None))
    }

    fn save(&self, tokens: &Tokens) -> Result<(), StoreError> {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(tokens.clone());
        }
        Ok(())
    }

    fn clear(&self) -> Result<(), StoreError> {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
        Ok(())
    }
}

impl StateStore for MemoryStore {
    fn load_state(&self) -> Result<Option<KitState>, StoreError> {
        Ok(self.1.lock().map(|t| t.clone()).unwrap_or(None))
    }

    fn save_state(&self, state: &KitState) -> Result<(), StoreError> {
        if let Ok(mut slot) = self.1.lock() {
            *slot = Some(state.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(generation: u64) -> Tokens {
        let json = format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"A{generation}","access_expires_at_ms":5000,"issued_at_ms":1000,
            "refresh_token":"R","refresh_expires_at_ms":90000,"scope":"live.read"}}"#
        );
        Tokens::from_json(json.as_bytes()).unwrap()
    }

    #[test]
    fn file_store_round_trips_atomically_with_mode_0600() {
        let dir = std::env::temp_dir().join(format!("onair-store-{}", std::process::id()));
        let store = FileStore::new(dir.join("nested").join("tokens.json"));
        assert!(store.load().unwrap().is_none());
        store.save(&tokens(1)).unwrap();
        store.save(&tokens(2)).unwrap();
        assert_eq!(store.load().unwrap().unwrap().generation(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let leftovers: Vec<_> = fs::read_dir(dir.join("nested"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
        store.clear().unwrap();
        store.clear().unwrap();
        assert!(store.load().unwrap().is_none());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_broken_file_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("onair-store-bad-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        fs::write(&path, b"{not json").unwrap();
        let error = FileStore::new(&path).load().unwrap_err();
        assert!(
            matches!(&error, StoreError::File { problem, .. } if matches!(**problem, StoreError::Load(_))),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "{}: not a token file (stored tokens are not valid (error at line 1 column 2)); \
                 restore a good copy, or delete it and give the bot a new consent code",
                path.display()
            )
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_kit_state_is_stored_like_tokens() {
        let dir = std::env::temp_dir().join(format!("onair-state-{}", std::process::id()));
        let store = FileStore::new(dir.join("state.json"));
        assert!(store.load_state().unwrap().is_none());
        let state =
            KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":3}"#).unwrap();
        store.save_state(&state).unwrap();
        assert_eq!(store.load_state().unwrap(), Some(state));
        fs::write(store.path(), br#"{"format":"onair.kit","version":9}"#).unwrap();
        let error = store.load_state().unwrap_err();
        assert!(
            matches!(&error, StoreError::File { problem, .. } if matches!(**problem, StoreError::State(_))),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "{}: not a kit state file (stored kit state: version 9 is not supported (this \
                 build reads versions 1 to 2)); restore a good copy, or delete it (the bot then starts with an \
                 empty memory and may greet people again)",
                store.path().display()
            )
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn memory_store_keeps_the_last_pair() {
        let store = MemoryStore::new();
        store.save(&tokens(3)).unwrap();
        assert_eq!(store.load().unwrap().unwrap().generation(), 3);
        store.clear().unwrap();
        assert!(store.load().unwrap().is_none());
    }
}
