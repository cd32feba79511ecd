-- Schema 1: conversations and their messages.
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,   -- ms since the epoch
    updated_at INTEGER NOT NULL
);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,            -- user | assistant
    text TEXT NOT NULL,
    state TEXT NOT NULL,           -- streaming | finished | stopped | failed (names are on disk: never rename)
    created_at INTEGER NOT NULL
);

CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
