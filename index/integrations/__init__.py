"""Integrations with the frameworks agents are built with, each behind its own extra:

    leanreplay.integrations.openai_agents   pip install 'leanreplay[agents]'
        LeanReplaySession, lean_input_filter, lean_tools (the OpenAI Agents SDK)
    leanreplay.integrations.langchain       pip install 'leanreplay[langchain]'
        LeanReplayMiddleware, lean_pre_model_hook (LangChain v1 and LangGraph)

They are faces of `index` (this folder is ``index/integrations``; ``leanreplay/integrations``
is a link to it) and are imported only by that name. Nothing else in leanreplay imports a
framework, so this package itself imports none either: each module does, and says which
extra to install when its framework is missing.
"""

__all__: list[str] = []
