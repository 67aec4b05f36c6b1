"""Words people use for what tools do, grouped by concept, for `CapabilityIndex.search`.

Tool descriptions are terse and written by the tool's author ("Create multiple new entities in
the knowledge graph"); requests are written by a user or a model ("Remember that Alice works at
Acme"). BM25 only matches words, so each query word also searches, at a lower weight, the other
words of its concept group. The groups are general vocabulary of agent tools (files, memory,
version control, browsers, chat, databases), not tuned to any one server's descriptions.
"""

from __future__ import annotations

__all__ = ["EXPANSION_WEIGHT", "FILLER", "related_words"]

EXPANSION_WEIGHT = 0.4  # a related word counts less than a word the user wrote

# Conversational filler that says nothing about which tool is meant.
_FILLER_WORDS = """a an the of to in on at for from into onto by with about as and or but if then
so i me my mine we us our you your it its this that these those there here is are was were be
been being do does did can could would should will shall may might please let lets need want
wants like just also some any all every each what which who whom whose how why when where
whether tell give"""
FILLER = frozenset(_FILLER_WORDS.split())

_GROUPS = [
    "folder directory dir subfolder subdirectory mkdir",
    "file files document contents",
    "delete remove drop forget erase rm",
    "rename move relocate mv",
    "find search locate grep lookup",
    "list ls enumerate",
    "write save overwrite",
    "get fetch retrieve obtain download",
    "create new make",
    "edit modify change fix replace update",
    "remember memory recall knowledge graph entity entities fact facts observation observations",
    "relation relations relationship link connect connection relate",
    "repo repos repository repositories github",
    "pr prs pull",
    "bug bugs issue issues ticket",
    "comment comments reply respond",
    "commit commits history",
    "review reviews approve approval reviewer",
    "ci checks check status passing",
    "url website site web page browser localhost http https",
    "screenshot picture image capture photo",
    "click press tap button",
    "type enter input fill field",
    "key keyboard keystroke",
    "dropdown select option choose pick menu",
    "hover mouse",
    "tab tabs",
    "console javascript js",
    "evaluate execute run eval",
    "wait pause sleep until appear disappear",
    "back previous",
    "network requests request traffic headers",
    "upload attach picker",
    "dialog alert popup confirm",
    "resize viewport window",
    "dark light theme scheme",
    "slack channel channels workspace",
    "message messages post send chat",
    "thread replies",
    "reaction emoji react",
    "user users member members people profile everyone",
    "sql query database db postgres rows",
    "spreadsheet spreadsheets sheet sheets excel xlsx workbook csv table tables columns",
    "sum add plus total addition numbers",
    "environment env variables",
    "compress gzip zip",
    "think reasoning reason thought thoughts steps problem",
    "pdf manual paper",
    "log logs lines line",
    "conversation chat earlier discussed said past",
    "elided placeholder original",
    "image png jpg jpeg gif svg webp diagram chart",
    "text yaml yml json toml ini txt md py js ts go rs",
    "size sizes large big bytes",
    "tree nested hierarchy recursive recursively structure",
]

_RELATED: dict[str, frozenset[str]] = {}
for _group in _GROUPS:
    _words = frozenset(_group.split())
    for _word in _words:
        _RELATED[_word] = _RELATED.get(_word, frozenset()) | (_words - {_word})


def related_words(word: str) -> frozenset[str]:
    """The other words of ``word``'s concept groups (lowercase), or none."""
    return _RELATED.get(word.lower(), frozenset())
