-- Schema 3: a reply's thinking (a thinking model's reasoning before its answer), kept apart
-- from its text; '' for every message written before.
ALTER TABLE messages ADD COLUMN thinking TEXT NOT NULL DEFAULT '';
