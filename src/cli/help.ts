/** `temporal-idempotency --help`: every command, option, field and exit code. */
import { DEFAULT_SCHEMA } from '../store/index.js';

export const HELP = `Usage: temporal-idempotency <command> [options]
       temporal-idempotency --version | --help

Commands:
  migrate [--worker-role R] [--operator-role R]
                                        create or upgrade the schema (run it as the schema's owner, on every
                                        deploy); grants the named roles what they need, no more
  grants [--worker-role R] [--operator-role R]
                                        print those GRANT statements, for a DBA to run by hand
  list [--state S] [--workflow ID] [--activity TYPE] [--older-than 1h] [--limit N]
                                        claims, those without an outcome first (S: claimed, unknown, completed, open)
  show KEY                              one claim, with its recorded result and the workflows waiting on it
  resolve KEY (--result JSON | --result-file PATH) [--force] [--reason TEXT] [--plaintext]
                                        it happened: record JSON as its result; later attempts return it.
                                        JSON is the activity's own return value (what its code returns,
                                        not the vendor's record): the workflow receives exactly it. Refused
                                        when its shape differs from the activity type's earlier results, or
                                        its validateResult (--worker-config activities) refuses it, unless
                                        --force. Encoded with --worker-config's payload converter and codecs,
                                        as a worker encodes a return value (--result-file -: stdin); refused
                                        without them where the claim shows the workers use codecs, unless
                                        --plaintext
  release KEY [--force] [--reason TEXT] it did not happen: delete the claim; the next attempt runs it. A completed
                                        claim is never released or resolved, but with --force one whose record
                                        fails under the secret it names, or that a --distrust ID (leaked) signed
  resume KEY                            tell workflows waiting on KEY in resumable() to call again: for a key
                                        that completed after it was refused, or when a signal was lost
  release-absent KEY --reason TEXT      it did not happen, for a key whose claim is gone (deleted outside the
                                        CLI): records the release, so \`resume\` may let workflows call again
  keys status                           how many rows each record secret signs, and which the CLI holds
  keys re-sign [--distrust ID]... [--reason TEXT]
                                        sign with the CLI's secret (the workers' current one) every row signed by
                                        another that checks (and unsigned rows, with 'unsigned' in previousSecrets):
                                        after it, the old secret can be dropped. Rows that do not check, or that a
                                        --distrust ID signed (a leaked secret), are left and listed for a person
                                        (exit 4)
  prune [--older-than D] [--vendor-key-window W] [--ledger-older-than L] [--dry-run] [--force]
                                        delete completed claims finished more than D ago (never one without
                                        an outcome, nor one whose workflow still runs or closed within D: it
                                        asks Temporal); prints what goes first. D defaults to the longest
                                        retention of the namespaces the claims were made in (read from
                                        Temporal; without Temporal, D must be given) or W, if longer. A D
                                        shorter than that retention, or under 1h, needs --force: a reset of a
                                        workflow Temporal still keeps answers from these records. No claim
                                        younger than W (the vendor's idempotency key lifetime, e.g. 24h for
                                        Stripe) goes, --force or not. --ledger-older-than L also deletes the
                                        ledger's calls older than L (at least 1d; never one whose key has no
                                        outcome)
  key --activity TYPE --args JSON [--scope S] [--workflow ID] [--run ID] [--activity-id ID] [--namespace NS]
      [--custom-key TEXT]              the key (hex and UUID) and fingerprint a worker claims that call under, with
                                        the schema's salt, and the claim there if any. JSON: the activity's arguments
                                        as an array (or what its keyArgs returns); S: workflow (default), run, call;
                                        NS: $TEMPORAL_NAMESPACE or default; --custom-key: what its key() returns
  ledger [--key KEY] [--workflow ID] [--limit N]
                                        calls that went out, newest first (with the audit ledger on). Exit 7
                                        when a claim asked about was made without it: no entry is not "not sent"

Options:
  --schema NAME      Postgres schema (default: $IDEMPOTENCY_SCHEMA or ${DEFAULT_SCHEMA})
  --json             machine-readable output
  --force            resolve or release a claim whose owner may still be running (live lease, or
                     before its attempt's deadline): only when you know that worker stopped; prune
                     at a horizon under the namespace's retention or under an hour
  --no-signal        after resolve, release or resume, do not signal the waiting workflows
  --workflow-id ID   signal this workflow too (beside the claim's own and every one refused on it)
  --reason TEXT      why (resolve, release, prune): kept in the operator trail that \`show\` prints
  --distrust ID      a record secret that leaked (keys re-sign, resolve, release): its rows are not vouched for
  --statement-timeout D
                     give up on a statement after D (e.g. 30s, 10m; default 60s, none for migrate):
                     a lock held elsewhere or a stalled server ends in exit 5, not a hang
  --worker-config P  a module exporting the workers' { payloadConverter, payloadCodecs, secret, previousSecrets }:
                     results are encoded and records signed as the workers do (default:
                     $TEMPORAL_IDEMPOTENCY_WORKER_CONFIG; the secret alone: $TEMPORAL_IDEMPOTENCY_SECRET)

Environment: DATABASE_URL or PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE (PGSSLMODE, or sslmode=… in
the URL, for TLS); connecting and logging in must finish within 5 s.
The signal to waiting workflows, and prune's questions (retention, running workflows), connect as the
\`temporal\` CLI does (with @temporalio/envconfig installed at your SDK's version): the profile
TEMPORAL_PROFILE (else "default") of the config file TEMPORAL_CONFIG_FILE (else
~/.config/temporalio/temporal.toml), overridden by TEMPORAL_ADDRESS (default localhost:7233),
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS and TEMPORAL_TLS_* (client cert and key, server CA,
server name) and TEMPORAL_GRPC_META_*. Without envconfig, only TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE,
in plaintext. Each workflow is signalled, and each claim's retention read, in the namespace recorded for
it; the profile's namespace applies to --workflow-id.

Fields: state claimed (a call may be running, or its worker died before recording), completed (recorded:
repeats get its result), unknown (the call may have gone out: a person decides). owner_alive: whether
the claiming worker still renews its lease. deadline_at: until when the claiming attempt may still run
(before it, resolve and release need --force). record: verified (signed, checks under a secret given),
not-checked (unsigned, obeyed: no record secret given), unverifiable (signed by a secret the CLI was not
given, or unsigned where it signs), rejected (does not check: written or changed without the secret).
arguments_check: whether the recorded arguments are the ones the claim's fingerprint was made from.
result: the recorded result as the workflow receives it. result_checked_against: what resolve held
your result against. migrate's granted: the roles it granted (none without --worker-role/--operator-role).

Exit codes: 0 ok, 1 unexpected failure, 2 bad usage or input, 3 no such key,
4 the claim's state does not allow it, 5 the database cannot be used (unreachable, login refused,
no answer in time, or the schema not migrated to this release: the message says which), 6 the claim
changed but a waiting workflow could not be signalled (signal it by hand, see README), 7 the ledger
cannot say whether a call went out (no audit ledger recorded it).`;
