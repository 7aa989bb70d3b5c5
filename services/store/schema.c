/* schema: the numbered migrations of the store's database.
 *
 * Migration i (counted from 1) takes the database from user_version i-1 to i.
 * A migration is never edited once released: a change to the schema is a new
 * migration appended at the end.
 */
#include "internal.h"

static const char *const migrations[] = {
    /* 1: settings, key bindings, sessions, secrets and the journal of unsaved text */
    "CREATE TABLE settings ("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL)" /* JSON text */
    " WITHOUT ROWID;"
    "CREATE TABLE keybindings ("
    "  position INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL,"
    "  command TEXT NOT NULL,"
    "  when_clause TEXT,"
    "  args TEXT);" /* JSON text */
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT,"
    "  type TEXT NOT NULL CHECK (type IN ('workspace', 'named')),"
    "  workspace_root TEXT,"
    "  saved_at INTEGER NOT NULL," /* ms since the epoch */
    "  document_count INTEGER NOT NULL,"
    "  state TEXT NOT NULL);" /* the SessionState JSON, as session/load answers it */
    "CREATE INDEX sessions_by_time ON sessions (saved_at DESC);"
    "CREATE TABLE secrets ("
    "  key TEXT PRIMARY KEY,"
    "  nonce BLOB NOT NULL,"
    "  ciphertext BLOB NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER,"
    "  description TEXT);"
    "CREATE TABLE instances ("
    "  id TEXT PRIMARY KEY," /* a running or past server */
    "  pid INTEGER NOT NULL,"
    "  started_at INTEGER NOT NULL);"
    "CREATE TABLE journal ("
    "  owner TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,"
    "  uri TEXT NOT NULL,"
    "  workspace TEXT NOT NULL," /* '' when the server had none */
    "  language_id TEXT NOT NULL,"
    "  saved_at INTEGER NOT NULL,"
    "  content BLOB NOT NULL,"
    "  PRIMARY KEY (owner, uri));"
    "CREATE INDEX journal_by_workspace ON journal (workspace, uri);",
    /* 2: the agent's chats and their messages */
    "CREATE TABLE chats ("
    "  id TEXT PRIMARY KEY,"
    "  title TEXT,"
    "  model TEXT," /* provider/model */
    "  created_at INTEGER NOT NULL," /* ms since the epoch */
    "  updated_at INTEGER NOT NULL);"
    "CREATE TABLE chat_messages ("
    "  chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  message TEXT NOT NULL," /* JSON: role, text, toolCalls or the tool result */
    "  PRIMARY KEY (chat_id, seq));",
    /* 3: the folders the user trusts (real paths); a folder's trust covers the folders beneath it */
    "CREATE TABLE trusted_folders ("
    "  path TEXT PRIMARY KEY,"
    "  trusted_at INTEGER NOT NULL)" /* ms since the epoch */
    " WITHOUT ROWID;",
};

size_t store__migration_count(void) { return sizeof migrations / sizeof migrations[0]; }

const char *store__migration(size_t index) { return migrations[index]; }
