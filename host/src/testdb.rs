//! Tests' databases: a SQLite file, or a throwaway PostgreSQL cluster
//! (`initdb` and `pg_ctl` in a temporary folder, on 127.0.0.1 at a free
//! port, stopped when dropped). Without PostgreSQL's binaries a Postgres
//! test says so and passes.

use std::path::PathBuf;
use std::process::Command;

use crate::bots::Hub;
use crate::crypto::TokenCipher;
use crate::store::Store;
use std::sync::Arc;

/// The tests' key.
pub fn cipher() -> TokenCipher {
    TokenCipher::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
        .expect("the tests' key")
}

/// A fresh SQLite database in a temporary folder (removed when dropped).
pub struct SqliteDb {
    dir: PathBuf,
    /// Its URL.
    pub url: String,
}

impl SqliteDb {
    /// A new one named `name`.
    pub fn new(name: &str) -> SqliteDb {
        let dir = std::env::temp_dir().join(format!("onair-host-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let url = format!("sqlite://{}?mode=rwc", dir.join("host.db").display());
        SqliteDb { dir, url }
    }
}

impl Drop for SqliteDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A PostgreSQL cluster of its own, stopped and removed when dropped.
pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    root: bool,
    /// Its URL (`postgres://onair@127.0.0.1:PORT/postgres`).
    pub url: String,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// Where PostgreSQL's server binaries are: `ONAIR_PG_BIN`, else the
/// newest `/usr/lib/postgresql/*/bin`, else `pg_config --bindir`.
pub fn pg_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("ONAIR_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop()
}

impl PgCluster {
    /// Starts one, or `None` (with a line saying why) when PostgreSQL is
    /// not installed.
    pub fn start(name: &str) -> Option<PgCluster> {
        let Some(bin) = pg_bin() else {
            eprintln!("SKIPPED {name}: PostgreSQL's server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)");
            return None;
        };
        let dir = std::env::temp_dir().join(format!(
            "onair-pg-{name}-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if root {
            // initdb refuses root: the cluster is the postgres user's.
            let ok = Command::new("chown")
                .args(["postgres"])
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown postgres {}", dir.display());
        }
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            l.local_addr().expect("port").port()
        };
        let cluster = PgCluster {
            dir: dir.clone(),
            bin: bin.clone(),
            root,
            url: format!("postgres://onair@127.0.0.1:{port}/postgres"),
            port,
        };
        let data = dir.join("data");
        cluster.run(
            "initdb",
            &[
                "-D",
                &data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "onair",
                "--no-sync",
            ],
        );
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            dir.display()
        );
        cluster.run(
            "pg_ctl",
            &[
                "-D",
                &data.display().to_string(),
                "-o",
                &opts,
                "-l",
                &dir.join("log").display().to_string(),
                "-w",
                "start",
            ],
        );
        Some(cluster)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let status = if self.root {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .stdout(std::process::Stdio::null())
                .status()
        } else {
            Command::new(&exe)
                .args(args)
                .stdout(std::process::Stdio::null())
                .status()
        };
        assert!(
            status.is_ok_and(|s| s.success()),
            "{tool} failed (log: {})",
            self.dir.join("log").display()
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data").display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Which database a test runs on.
pub enum Db {
    /// SQLite.
    Sqlite(SqliteDb),
    /// PostgreSQL.
    Postgres(PgCluster),
}

impl Db {
    /// Its URL.
    pub fn url(&self) -> &str {
        match self {
            Db::Sqlite(d) => &d.url,
            Db::Postgres(c) => &c.url,
        }
    }

    /// A store on it (a replica of its own).
    pub async fn store(&self) -> Store {
        Store::open(self.url(), cipher()).await.expect("store")
    }
}

/// Runs `check` on SQLite and, when installed, on PostgreSQL.
macro_rules! on_both {
    ($name:ident, $check:ident) => {
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                let db = $crate::testdb::Db::Sqlite($crate::testdb::SqliteDb::new(concat!(
                    stringify!($name),
                    "-sqlite"
                )));
                super::$check(&db).await;
            }

            #[tokio::test]
            async fn postgres() {
                let Some(c) = $crate::testdb::PgCluster::start(stringify!($name)) else {
                    return;
                };
                let db = $crate::testdb::Db::Postgres(c);
                super::$check(&db).await;
            }
        }
    };
}
pub(crate) use on_both;

/// A TCP proxy in front of a database that counts round trips: each time a
/// client starts writing after the server last wrote is one.
pub struct CountingProxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    trips: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl CountingProxy {
    /// A proxy to 127.0.0.1:`to`.
    pub async fn start(to: u16) -> CountingProxy {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let trips = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&trips);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await else {
                    continue;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                // true: the client spoke last.
                let client_last = Arc::new(AtomicBool::new(false));
                let (c1, c2) = (Arc::clone(&client_last), client_last);
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = cr.read(&mut buf).await {
                        if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        if !c1.swap(true, Ordering::AcqRel) {
                            counter.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = sr.read(&mut buf).await {
                        if n == 0 || cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        c2.store(false, Ordering::Release);
                    }
                });
            }
        });
        CountingProxy { port, trips }
    }

    /// Round trips so far.
    pub fn trips(&self) -> u64 {
        self.trips.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// A hub over `url` for the app `(base_url, client_id, secret)`.
pub async fn hub_of(url: &str, budget: u32, app: (&str, &str, &str)) -> Arc<Hub> {
    let config = config_of(url, budget, app);
    let store = crate::store::Store::open(config.database_url.expose(), config.cipher.clone())
        .await
        .expect("store");
    Hub::new(Arc::new(config), store, Arc::new(onair_tokio::SystemClock))
        .await
        .expect("hub")
}

/// A host's configuration over `url` for the app `(base_url, client_id,
/// secret)`, with the tests' key and admin token.
pub fn config_of(url: &str, budget: u32, app: (&str, &str, &str)) -> crate::HostConfig {
    use crate::config::{ENV_ADMIN_TOKEN, ENV_CLIENT_SECRET, ENV_DATABASE, ENV_KEY};
    let (base, client_id, secret) = app;
    let text = format!(
        r#"[app]
base_url = "{base}"
client_id = "{client_id}"
consent_url = "{base}/oauth?client_id={{client_id}}&redirect_uri={{redirect_uri}}&state={{state}}"
[host]
probe_budget_per_s = {budget}
"#
    );
    let url = url.to_owned();
    let secret = secret.to_owned();
    let env = move |name: &str| match name {
        ENV_CLIENT_SECRET => Some(secret.clone()),
        ENV_KEY => Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".to_owned()),
        ENV_ADMIN_TOKEN => Some("admin-token-of-the-host-tests".to_owned()),
        ENV_DATABASE => Some(url.clone()),
        _ => None,
    };
    crate::HostConfig::parse(&text, &std::env::temp_dir(), &env).expect("config")
}
