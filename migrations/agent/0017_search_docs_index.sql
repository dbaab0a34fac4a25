-- [PF-4] search_docs_conversation (conversation_id) is no longer read: since 0016 the search
-- triggers look up a Conversation's doc only with `turn_id IS NULL` (its title doc, through the
-- partial unique index search_docs_title) and a Turn's doc by turn_id. Each Turn's doc insert
-- wrote a page of it.
DROP INDEX search_docs_conversation;
