//! Tests' databases: a SQLite file, or a throwaway PostgreSQL cluster
//! (`initdb` and `pg_ctl` in a temporary folder, on 127.0.0.1 at a free
//! port, stopped when dropped). Without PostgreSQL's binaries a Postgres
//! test says so and passes.

use std::path::PathBuf;
use std::process::Command;

use crate::crypto::TokenCipher;
use crate::store::Store;

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
