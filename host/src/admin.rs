//! `cuecraft admin`: the settings pages of the application, as commands that each print one JSON
//! object. They write the same SQLite files the server reads (WAL), so they work while it runs.

use anyhow::{bail, Context};
use clap::Subcommand;
use cuecraft_engine::PartialSettings;
use serde_json::{json, Value};

use crate::store::{NewOrgOwner, Store, StoreError, LOGIN_LINK_TTL_MS};
use crate::util::{is_id, new_api_key, new_id, now_ms, parse_rfc3339, rfc3339, sha256};

/// The plan's default maximum file size: the contract's own ceiling, 5 GiB.
pub const DEFAULT_MAX_BYTES: i64 = 5_368_709_120;
/// The plan's default maximum duration: 4 hours.
pub const DEFAULT_MAX_SECONDS: f64 = 14_400.0;

/// Manage organisations, members, keys, folders, presets, credits and the quota.
#[derive(Debug, clap::Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub backend: crate::backend::BackendArgs,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// The resources the admin commands manage.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Organisations.
    Org {
        #[command(subcommand)]
        command: OrgCommand,
    },
    /// Members of an organisation.
    Member {
        #[command(subcommand)]
        command: MemberCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Folders.
    Folder {
        #[command(subcommand)]
        command: FolderCommand,
    },
    /// Upload presets.
    Preset {
        #[command(subcommand)]
        command: PresetCommand,
    },
    /// Credits.
    Credits {
        #[command(subcommand)]
        command: CreditsCommand,
    },
    /// The platform's monthly upload quota.
    Quota {
        #[command(subcommand)]
        command: QuotaCommand,
    },
    /// First start: creates an organisation, its owner, an API key and a sign-in link; prints
    /// `{"orgId","memberId","keyId","key","signInUrl","expiresAt"}`. The key is shown this once.
    Quickstart {
        /// The organisation's name.
        #[arg(long, default_value = "My organisation")]
        org_name: String,
        /// The owner's e-mail address.
        #[arg(long, default_value = "owner@example.com")]
        email: String,
        /// Starting credits, in cents (default: 100 minutes at the default price).
        #[arg(long, default_value_t = 1000)]
        credits_cents: i64,
        /// The server's public URL (default: the one `serve` last recorded, else
        /// http://127.0.0.1:8080).
        #[arg(long)]
        public_url: Option<String>,
    },
}

/// `admin org ...`
#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Creates an organisation; prints `{"id"}`.
    Create {
        #[arg(long)]
        name: String,
        /// Starting credits, in cents.
        #[arg(long, default_value_t = 0)]
        credits_cents: i64,
        /// The plan's largest file, bytes (default 5 GiB).
        #[arg(long, default_value_t = DEFAULT_MAX_BYTES)]
        max_bytes: i64,
        /// The plan's longest media, seconds (default 4 hours).
        #[arg(long, default_value_t = DEFAULT_MAX_SECONDS)]
        max_seconds: f64,
    },
}

/// `admin member ...`
#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Adds a member; prints `{"id"}`.
    Add {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
        /// owner, admin or member.
        #[arg(long)]
        role: String,
        /// When the member joined (RFC 3339); default now.
        #[arg(long)]
        joined: Option<String>,
    },
    /// Marks a member as having left and ends their sessions; prints `{"id","leftAt"}`.
    Remove {
        #[arg(long)]
        org: String,
        #[arg(long)]
        member: String,
    },
    /// Prints a one-time sign-in link for an active member, valid 15 minutes:
    /// `{"memberId","signInUrl","expiresAt"}`.
    LoginLink {
        #[arg(long)]
        member: String,
        /// The server's public URL (default: the one `serve` last recorded, else
        /// http://127.0.0.1:8080).
        #[arg(long)]
        public_url: Option<String>,
    },
}

/// `admin key ...`
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Creates an API key for the organisation, made by an active owner or admin; prints
    /// `{"id","key"}`. The key is shown this once.
    Create {
        #[arg(long)]
        org: String,
        #[arg(long)]
        member: String,
    },
    /// Revokes a key; prints `{"id","revokedAt"}`.
    Revoke {
        #[arg(long)]
        key_id: String,
    },
}

/// `admin folder ...`
#[derive(Debug, Subcommand)]
pub enum FolderCommand {
    /// Creates a folder; prints `{"id"}`.
    Create {
        #[arg(long)]
        org: String,
        #[arg(long)]
        name: String,
    },
    /// Gives a member access to a folder's projects; prints `{"folderId","memberId"}`.
    AddMember {
        #[arg(long)]
        folder: String,
        #[arg(long)]
        member: String,
    },
}

/// `admin preset ...`
#[derive(Debug, Subcommand)]
pub enum PresetCommand {
    /// Creates an upload preset from a settings object; prints `{"id"}`.
    Create {
        #[arg(long)]
        org: String,
        #[arg(long)]
        name: String,
        /// The settings, as the API's `settings` object.
        #[arg(long)]
        settings: String,
    },
}

/// `admin credits ...`
#[derive(Debug, Subcommand)]
pub enum CreditsCommand {
    /// Adds credits; prints `{"balanceCents"}`.
    Add {
        #[arg(long)]
        org: String,
        #[arg(long, allow_hyphen_values = true)]
        cents: i64,
    },
}

/// `admin quota ...`
#[derive(Debug, Subcommand)]
pub enum QuotaCommand {
    /// Sets the platform's monthly upload quota; prints `{"monthlyBytes"}`.
    Set {
        #[arg(long)]
        monthly_bytes: i64,
    },
}

fn check_id(what: &str, id: &str) -> anyhow::Result<()> {
    if !is_id(id) {
        bail!("{what} id must be 24 lowercase hexadecimal characters: {id:?}");
    }
    Ok(())
}

fn org_exists(store: &dyn Store, org: &str) -> anyhow::Result<()> {
    check_id("organisation", org)?;
    if !store.org_exists(org)? {
        bail!("no organisation {org}");
    }
    Ok(())
}

/// The file in which `serve` records its public URL, for the sign-in links `admin` prints.
pub const PUBLIC_URL_FILE: &str = "public-url";

/// The public URL for printed links: the argument, else what `serve` recorded, else the default
/// listen address.
fn public_url(data_dir: &std::path::Path, arg: Option<String>) -> String {
    arg.or_else(|| {
        std::fs::read_to_string(data_dir.join(PUBLIC_URL_FILE))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    })
    .unwrap_or_else(|| "http://127.0.0.1:8080".to_string())
    .trim_end_matches('/')
    .to_string()
}

/// A sign-in link for an active member: (url, expiresAt).
fn login_link(
    store: &dyn Store,
    data_dir: &std::path::Path,
    member: &str,
    url: Option<String>,
    now: i64,
) -> anyhow::Result<(String, String)> {
    check_id("member", member)?;
    let token = store.create_login_link(member, now).map_err(|e| match e {
        StoreError::NoActiveMember => anyhow::anyhow!("no active member {member}"),
        e => anyhow::anyhow!(e),
    })?;
    Ok((
        format!("{}/login/{token}", public_url(data_dir, url)),
        rfc3339(now + LOGIN_LINK_TTL_MS),
    ))
}

/// Runs one admin command and returns the JSON object it prints.
pub fn run(args: AdminArgs) -> anyhow::Result<Value> {
    let data_dir = args.backend.data_dir.clone();
    let store = args
        .backend
        .open_store()
        .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
    let store: &dyn Store = store.as_ref();
    let now = now_ms();
    match args.command {
        AdminCommand::Org {
            command:
                OrgCommand::Create {
                    name,
                    credits_cents,
                    max_bytes,
                    max_seconds,
                },
        } => {
            if name.trim().is_empty() {
                bail!("--name must not be empty");
            }
            if max_bytes < 1 || !(max_seconds.is_finite() && max_seconds > 0.0) {
                bail!("--max-bytes and --max-seconds must be positive");
            }
            let id = new_id()?;
            store.create_org(&id, &name, max_bytes, max_seconds, now)?;
            if credits_cents != 0 {
                store.add_credit(&id, credits_cents)?;
            }
            Ok(json!({ "id": id }))
        }
        AdminCommand::Member {
            command:
                MemberCommand::Add {
                    org,
                    email,
                    role,
                    joined,
                },
        } => {
            if !matches!(role.as_str(), "owner" | "admin" | "member") {
                bail!("--role must be owner, admin or member");
            }
            if !email.contains('@') {
                bail!("--email must be an e-mail address");
            }
            let joined_at = match joined {
                Some(j) => parse_rfc3339(&j)
                    .with_context(|| format!("--joined must be an RFC 3339 date-time: {j:?}"))?,
                None => now,
            };
            let id = new_id()?;
            org_exists(store, &org)?;
            store.add_member(&id, &org, &email, &role, joined_at)?;
            Ok(json!({ "id": id }))
        }
        AdminCommand::Member {
            command: MemberCommand::Remove { org, member },
        } => {
            check_id("member", &member)?;
            org_exists(store, &org)?;
            let left = match store.member_of(&org, &member)? {
                None => bail!("no member {member} in organisation {org}"),
                Some((_, Some(left))) => left,
                Some((_, None)) => store.remove_member(&member, now)?,
            };
            Ok(json!({ "id": member, "leftAt": rfc3339(left) }))
        }
        AdminCommand::Member {
            command: MemberCommand::LoginLink { member, public_url },
        } => {
            let (url, expires) = login_link(store, &data_dir, &member, public_url, now)?;
            Ok(json!({ "memberId": member, "signInUrl": url, "expiresAt": expires }))
        }
        AdminCommand::Folder {
            command: FolderCommand::AddMember { folder, member },
        } => {
            check_id("folder", &folder)?;
            check_id("member", &member)?;
            if !store.folder_shares_org(&folder, &member)? {
                bail!("no folder {folder} with an active member {member} in its organisation");
            }
            store.add_folder_member(&folder, &member)?;
            Ok(json!({ "folderId": folder, "memberId": member }))
        }
        AdminCommand::Quickstart {
            org_name,
            email,
            credits_cents,
            public_url,
        } => {
            if org_name.trim().is_empty() || !email.contains('@') {
                bail!("--org-name must not be empty and --email must be an e-mail address");
            }
            let (org, member, key_id) = (new_id()?, new_id()?, new_id()?);
            let key = new_api_key()?;
            store.create_org_with_owner(&NewOrgOwner {
                org_id: &org,
                org_name: &org_name,
                max_bytes: DEFAULT_MAX_BYTES,
                max_seconds: DEFAULT_MAX_SECONDS,
                member_id: &member,
                email: &email,
                key_id: &key_id,
                key_hash: &sha256(key.as_bytes()),
                now,
            })?;
            if credits_cents != 0 {
                store.add_credit(&org, credits_cents)?;
            }
            let (url, expires) = login_link(store, &data_dir, &member, public_url, now)?;
            Ok(json!({
                "orgId": org,
                "memberId": member,
                "keyId": key_id,
                "key": key,
                "signInUrl": url,
                "expiresAt": expires,
            }))
        }
        AdminCommand::Key {
            command: KeyCommand::Create { org, member },
        } => {
            check_id("member", &member)?;
            let key = new_api_key()?;
            let id = new_id()?;
            org_exists(store, &org)?;
            match store.member_of(&org, &member)? {
                None => bail!("no member {member} in organisation {org}"),
                Some((_, Some(_))) => bail!("member {member} has left the organisation"),
                Some((role, None)) if role != "owner" && role != "admin" => {
                    bail!("only an owner or admin can create API keys; {member} is a {role}")
                }
                Some(_) => {}
            }
            store.create_key(&id, &org, &member, &sha256(key.as_bytes()), now)?;
            Ok(json!({ "id": id, "key": key }))
        }
        AdminCommand::Key {
            command: KeyCommand::Revoke { key_id },
        } => {
            check_id("key", &key_id)?;
            let revoked = match store.revoke_key(&key_id, now) {
                Err(StoreError::NotFound(_)) => bail!("no API key {key_id}"),
                r => r?,
            };
            Ok(json!({ "id": key_id, "revokedAt": rfc3339(revoked) }))
        }
        AdminCommand::Folder {
            command: FolderCommand::Create { org, name },
        } => {
            if name.trim().is_empty() {
                bail!("--name must not be empty");
            }
            let id = new_id()?;
            org_exists(store, &org)?;
            store.create_folder(&id, &org, &name, now)?;
            Ok(json!({ "id": id }))
        }
        AdminCommand::Preset {
            command:
                PresetCommand::Create {
                    org,
                    name,
                    settings,
                },
        } => {
            let value: Value = crate::json::value(settings.as_bytes())
                .with_context(|| "--settings must be a JSON object".to_string())?;
            let partial = PartialSettings::from_json(&value, "settings").map_err(|errs| {
                let list: Vec<String> = errs
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect();
                anyhow::anyhow!("invalid settings: {}", list.join("; "))
            })?;
            let id = new_id()?;
            let stored = partial.to_json().to_string();
            org_exists(store, &org)?;
            store.create_preset(&id, &org, &name, &stored, now)?;
            Ok(json!({ "id": id }))
        }
        AdminCommand::Credits {
            command: CreditsCommand::Add { org, cents },
        } => {
            org_exists(store, &org)?;
            let balance = store.add_credit(&org, cents)?;
            Ok(json!({ "balanceCents": balance }))
        }
        AdminCommand::Quota {
            command: QuotaCommand::Set { monthly_bytes },
        } => {
            if monthly_bytes < 0 {
                bail!("--monthly-bytes must not be negative");
            }
            store.set_monthly_quota(monthly_bytes)?;
            Ok(json!({ "monthlyBytes": monthly_bytes }))
        }
    }
}
