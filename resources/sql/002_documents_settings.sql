-- Schema 2: documents in a conversation's context, per-conversation engine settings, and
-- why a reply ended.
ALTER TABLE messages ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';  -- end | max_tokens | context_full | stopped | interrupted
ALTER TABLE messages ADD COLUMN note TEXT NOT NULL DEFAULT '';         -- e.g. the summary method, the error

CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    format TEXT NOT NULL,          -- txt | md | pdf | html
    sha256 TEXT NOT NULL,          -- of the file's bytes, hex
    file_bytes INTEGER NOT NULL,
    token_count INTEGER NOT NULL DEFAULT -1,   -- -1: not measured yet (depends on the model)
    text TEXT NOT NULL,            -- the extracted text, so the conversation survives the file moving
    added_at INTEGER NOT NULL
);

CREATE INDEX documents_by_conversation ON documents(conversation_id);

CREATE TABLE conversation_settings (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    json TEXT NOT NULL             -- EngineSettings as JSON (engine_settings.h)
);
