//! cuecraft-host: the /v1 job API, the job pipeline and the admin commands.
