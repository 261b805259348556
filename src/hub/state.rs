//! This machine's hub files, under `<index>/hub/`, readable by this user alone (mode 600): the login (a person's
//! URL with its password), the admin's URL (only where `init` ran), the push watermark and the forgets the hub
//! has not heard of yet.

use super::HubError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where this machine keeps its hub files.
pub fn hub_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("hub")
}

/// How this machine pushes and searches: as whom, where, and under which machine name.
#[derive(Clone, Serialize, Deserialize)]
pub struct Login {
    /// The person's connection URL, password included.
    pub url: String,
    /// The person's name (their role without the prefix).
    pub person: String,
    /// This machine's name on the hub.
    pub machine: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({} on {})", self.person, self.machine)
    }
}

/// The admin's credential, kept where `init` ran.
#[derive(Clone, Serialize, Deserialize)]
struct Admin {
    url: String,
}

/// What has been pushed: per session, how many of its messages the hub holds (as of the last complete push of
/// it). A session whose count is unchanged is not looked at again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Watermark {
    pub sessions: BTreeMap<String, u64>,
    /// Sessions forgotten here whose removal from the hub has not been confirmed yet.
    #[serde(default)]
    pub forgotten: Vec<String>,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, HubError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| HubError::Damaged {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HubError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `value` whole (a crash leaves the old file) and readable by this user alone.
fn write_private<T: Serialize>(path: &Path, value: &T) -> Result<(), HubError> {
    let io = |source| HubError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
        let _ = crate::private::tighten(dir);
    }
    let bytes = serde_json::to_vec_pretty(value).expect("hub state serializes");
    crate::atomic_file::write_atomic(path, &bytes).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    Ok(())
}

/// This machine's login, if any.
pub fn load_login(index_dir: &Path) -> Result<Option<Login>, HubError> {
    read_json(&hub_dir(index_dir).join("login.json"))
}

/// Records the login (mode 600).
pub fn save_login(index_dir: &Path, login: &Login) -> Result<(), HubError> {
    write_private(&hub_dir(index_dir).join("login.json"), login)
}

/// Removes the login (`ghola hub logout`); the watermark goes with it, since another person's hub holds none of
/// it.
pub fn remove_login(index_dir: &Path) -> Result<bool, HubError> {
    let dir = hub_dir(index_dir);
    let _ = std::fs::remove_file(dir.join("pushed.json"));
    match std::fs::remove_file(dir.join("login.json")) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(HubError::Io {
            path: dir.join("login.json"),
            source,
        }),
    }
}

/// The admin's URL, where `init` ran.
pub fn load_admin(index_dir: &Path) -> Result<Option<String>, HubError> {
    Ok(read_json::<Admin>(&hub_dir(index_dir).join("admin.json"))?.map(|a| a.url))
}

/// Records the admin's URL (mode 600).
pub fn save_admin(index_dir: &Path, url: &str) -> Result<(), HubError> {
    write_private(
        &hub_dir(index_dir).join("admin.json"),
        &Admin {
            url: url.to_string(),
        },
    )
}

/// The watermark (empty when none was written).
pub fn load_watermark(index_dir: &Path) -> Result<Watermark, HubError> {
    Ok(read_json(&hub_dir(index_dir).join("pushed.json"))?.unwrap_or_default())
}

/// Records the watermark, whole.
pub fn save_watermark(index_dir: &Path, w: &Watermark) -> Result<(), HubError> {
    write_private(&hub_dir(index_dir).join("pushed.json"), w)
}
