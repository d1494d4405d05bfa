//! `cuecraft admin`: the settings pages of the application, as commands that each print one JSON
//! object. They write the same SQLite files the server reads (WAL), so they work while it runs.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Subcommand;
use cuecraft_engine::PartialSettings;
use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use crate::db::Store;
use crate::util::{is_id, new_api_key, new_id, now_ms, parse_rfc3339, rfc3339, sha256};

/// The plan's default maximum file size: the contract's own ceiling, 5 GiB.
pub const DEFAULT_MAX_BYTES: i64 = 5_368_709_120;
/// The plan's default maximum duration: 4 hours.
pub const DEFAULT_MAX_SECONDS: f64 = 14_400.0;

/// Manage organisations, members, keys, folders, presets, credits and the quota.
#[derive(Debug, clap::Args)]
pub struct AdminArgs {
    /// The server's data directory.
    #[arg(long, global = true, default_value = "data")]
    pub data_dir: PathBuf,
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
    /// Marks a member as having left; prints `{"id","leftAt"}`.
    Remove {
        #[arg(long)]
        org: String,
        #[arg(long)]
        member: String,
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

fn org_exists(conn: &rusqlite::Connection, org: &str) -> anyhow::Result<()> {
    check_id("organisation", org)?;
    let found: Option<String> = conn
        .query_row("SELECT id FROM orgs WHERE id = ?1", [org], |r| r.get(0))
        .optional()?;
    if found.is_none() {
        bail!("no organisation {org}");
    }
    Ok(())
}

/// Runs one admin command and returns the JSON object it prints.
pub fn run(args: AdminArgs) -> anyhow::Result<Value> {
    let store = Store::open(&args.data_dir)
        .with_context(|| format!("opening the data directory {}", args.data_dir.display()))?;
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
            store.with(|c| {
                c.execute(
                    "INSERT INTO orgs (id, name, max_bytes, max_seconds, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, name, max_bytes, max_seconds, now],
                )
            })?;
            if credits_cents != 0 {
                store.with_billing(|c| crate::billing::add_credit(c, &id, credits_cents))?;
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
            store.with(|c| -> anyhow::Result<()> {
                org_exists(c, &org)?;
                c.execute(
                    "INSERT INTO members (id, org_id, email, role, joined_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, org, email, role, joined_at],
                )?;
                Ok(())
            })?;
            Ok(json!({ "id": id }))
        }
        AdminCommand::Member {
            command: MemberCommand::Remove { org, member },
        } => {
            check_id("member", &member)?;
            let left = store.with(|c| -> anyhow::Result<i64> {
                org_exists(c, &org)?;
                let row: Option<Option<i64>> = c
                    .query_row(
                        "SELECT left_at FROM members WHERE id = ?1 AND org_id = ?2",
                        [&member, &org],
                        |r| r.get(0),
                    )
                    .optional()?;
                match row {
                    None => bail!("no member {member} in organisation {org}"),
                    Some(Some(left)) => Ok(left),
                    Some(None) => {
                        c.execute(
                            "UPDATE members SET left_at = ?1 WHERE id = ?2",
                            params![now, member],
                        )?;
                        Ok(now)
                    }
                }
            })?;
            Ok(json!({ "id": member, "leftAt": rfc3339(left) }))
        }
        AdminCommand::Key {
            command: KeyCommand::Create { org, member },
        } => {
            check_id("member", &member)?;
            let key = new_api_key()?;
            let id = new_id()?;
            store.with(|c| -> anyhow::Result<()> {
                org_exists(c, &org)?;
                let row: Option<(String, Option<i64>)> = c
                    .query_row(
                        "SELECT role, left_at FROM members WHERE id = ?1 AND org_id = ?2",
                        [&member, &org],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                match row {
                    None => bail!("no member {member} in organisation {org}"),
                    Some((_, Some(_))) => bail!("member {member} has left the organisation"),
                    Some((role, None)) if role != "owner" && role != "admin" => {
                        bail!("only an owner or admin can create API keys; {member} is a {role}")
                    }
                    Some(_) => {}
                }
                c.execute(
                    "INSERT INTO api_keys (id, org_id, member_id, key_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, org, member, sha256(key.as_bytes()), now],
                )?;
                Ok(())
            })?;
            Ok(json!({ "id": id, "key": key }))
        }
        AdminCommand::Key {
            command: KeyCommand::Revoke { key_id },
        } => {
            check_id("key", &key_id)?;
            let revoked = store.with(|c| -> anyhow::Result<i64> {
                let row: Option<Option<i64>> = c
                    .query_row(
                        "SELECT revoked_at FROM api_keys WHERE id = ?1",
                        [&key_id],
                        |r| r.get(0),
                    )
                    .optional()?;
                match row {
                    None => bail!("no API key {key_id}"),
                    Some(Some(at)) => Ok(at),
                    Some(None) => {
                        c.execute(
                            "UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2",
                            params![now, key_id],
                        )?;
                        Ok(now)
                    }
                }
            })?;
            Ok(json!({ "id": key_id, "revokedAt": rfc3339(revoked) }))
        }
        AdminCommand::Folder {
            command: FolderCommand::Create { org, name },
        } => {
            if name.trim().is_empty() {
                bail!("--name must not be empty");
            }
            let id = new_id()?;
            store.with(|c| -> anyhow::Result<()> {
                org_exists(c, &org)?;
                c.execute(
                    "INSERT INTO folders (id, org_id, name, created_at) VALUES (?1, ?2, ?3, ?4)",
                    params![id, org, name, now],
                )?;
                Ok(())
            })?;
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
            store.with(|c| -> anyhow::Result<()> {
                org_exists(c, &org)?;
                c.execute(
                    "INSERT INTO presets (id, org_id, name, settings, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, org, name, stored, now],
                )?;
                Ok(())
            })?;
            Ok(json!({ "id": id }))
        }
        AdminCommand::Credits {
            command: CreditsCommand::Add { org, cents },
        } => {
            store.with(|c| org_exists(c, &org))?;
            let balance = store.with_billing(|c| crate::billing::add_credit(c, &org, cents))?;
            Ok(json!({ "balanceCents": balance }))
        }
        AdminCommand::Quota {
            command: QuotaCommand::Set { monthly_bytes },
        } => {
            if monthly_bytes < 0 {
                bail!("--monthly-bytes must not be negative");
            }
            store.with(|c| {
                c.execute(
                    "INSERT INTO platform (key, value) VALUES ('monthly_bytes', ?1)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [monthly_bytes],
                )
            })?;
            Ok(json!({ "monthlyBytes": monthly_bytes }))
        }
    }
}
