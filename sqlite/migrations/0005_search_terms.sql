-- The full-text index in a new shape: each word of a message is indexed
-- as a term of its room, "word_num" (num being the room's number, see
-- 0003), so that a search reads the postings of the caller's rooms only,
-- instead of a word's postings in every room.
--
-- The program makes the terms (sqlite/terms.go): it splits a text into
-- words the way it splits a search (runs of letters and digits, case
-- folded; "_" is neither, so "word_num" has one reading), and FTS5 only
-- separates the terms at spaces. The ascii tokenizer keeps every
-- character but ASCII punctuation and spaces in a token ("_" made a token
-- character here), and folds nothing the program has not folded: index and
-- query agree whatever the script.
--
-- The table is contentless: it keeps only the index. The writer keeps it
-- in the send's, edit's or deletion's transaction: insert a message's
-- terms; an edit deletes the old text's terms ('delete' with the terms
-- that were indexed, which the program makes again from the old text) and
-- inserts the new one's; a deletion only deletes. Tombstones are not in
-- it. detail = none, columnsize = 0: a search only asks which messages
-- hold every term. Its rowid is the key of 0003: num << 36 | seq.
--
-- After this file, in the same transaction, the program fills the table
-- from every message that is not a tombstone (sqlite/migrate.go, afterSQL).

DROP TABLE messages_fts;
DROP VIEW messages_text;

CREATE VIRTUAL TABLE search_terms USING fts5 (
	terms,
	content = '',
	tokenize = "ascii tokenchars _",
	detail = none,
	columnsize = 0
);
