"""A model provider's failure as one line: what was called, why, what went wrong, the fix.

A chat model or an embedder from a provider (OpenAI, Azure, Anthropic, an Ollama or vLLM
server behind an OpenAI-compatible ``base_url``) fails with its SDK's own exception — an
``openai.APIConnectionError`` that names no server, an ``AuthenticationError`` under a long
traceback. :func:`provider_error` turns such a failure into a
:class:`~langmem_plugin.errors.ProviderError` (or a subclass) whose message says which object
was called (its class, model and base URL, never its key), why this package called it, what
the provider answered, and the fix; the SDK's exception stays the ``__cause__``.

:func:`is_provider_failure` says whether an exception came from a provider's SDK or its HTTP
client, so that the places that translate (the embeddings calls of a store, the dims probe,
the demo) leave every other exception — a bug, a ``ValueError`` of the user's own function —
as it was.

>>> from langchain_openai import OpenAIEmbeddings
>>> describe(OpenAIEmbeddings(model="nomic-embed-text", base_url="http://localhost:11434/v1", api_key="x"))
"OpenAIEmbeddings(model='nomic-embed-text', base_url='http://localhost:11434/v1')"
"""

from __future__ import annotations

from typing import Any

from langmem_plugin.errors import (
    ChatModelError,
    ChatModelUnavailableError,
    EmbeddingsError,
    EmbeddingsUnavailableError,
    LangMemPluginError,
    ProviderError,
    ProviderUnavailableError,
    redacted_url,
)

__all__ = ["base_url", "describe", "is_provider_failure", "provider_error"]

#: The top-level modules whose exceptions are a provider's: SDKs and the HTTP clients they use.
PROVIDER_MODULES = frozenset(
    {
        "aiohttp",
        "anthropic",
        "botocore",
        "cohere",
        "google",
        "groq",
        "httpcore",
        "httpx",
        "langchain_anthropic",
        "langchain_aws",
        "langchain_google_genai",
        "langchain_mistralai",
        "langchain_ollama",
        "langchain_openai",
        "mistralai",
        "ollama",
        "openai",
        "requests",
        "urllib",
        "urllib3",
    }
)
_CONNECTION_FAILURES = frozenset(
    {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "TimeoutException"}
)
_MODEL_ATTRIBUTES = ("model", "model_name")
_DEPLOYMENTS = ("azure_deployment", "deployment_name", "deployment")
_URL_ATTRIBUTES = ("base_url", "openai_api_base", "azure_endpoint", "anthropic_api_url", "api_base")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def base_url(provider: Any) -> str | None:
    """The URL ``provider`` (a chat model or an embedder) sends its requests to, when it says.

    Read from the LangChain fields (``base_url``, ``openai_api_base``, ``azure_endpoint``, ...),
    else from the SDK client it holds (OpenAI's default, ``https://api.openai.com/v1``, shows
    there); ``None`` when neither says. A password in the URL is masked.
    """
    for attribute in _URL_ATTRIBUTES:
        url = _text(getattr(provider, attribute, None))
        if url:
            return redacted_url(url)
    client = getattr(getattr(provider, "client", None), "_client", None)  # an openai resource's client
    url = getattr(client, "base_url", None)
    return redacted_url(str(url)) if url is not None and str(url) else None


def describe(provider: Any) -> str:
    """``provider`` in a few words: its class, its model and its base URL (never its key).

    A string is returned as it is (what a failed constructor was asked to make).
    """
    if isinstance(provider, str):
        return provider
    parts = []
    model = next((m for m in (_text(getattr(provider, a, None)) for a in _MODEL_ATTRIBUTES) if m), None)
    if model:
        parts.append(f"model={model!r}")
    if _text(getattr(provider, "azure_endpoint", None)):  # Azure calls a deployment, named apart
        deployment = next((d for d in (_text(getattr(provider, a, None)) for a in _DEPLOYMENTS) if d), None)
        if deployment and deployment != model:
            parts.append(f"deployment={deployment!r}")
    url = base_url(provider)
    if url:
        parts.append(f"base_url={url!r}")
    return f"{type(provider).__name__}({', '.join(parts)})"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during, innermost last."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen) and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _from_provider(exc: BaseException) -> bool:
    return any(cls.__module__.split(".")[0] in PROVIDER_MODULES for cls in type(exc).__mro__)


def is_provider_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a provider's failure: raised by (or from) a provider SDK's or HTTP
    client's exception, or a connection that failed (``ConnectionError``, ``TimeoutError``).
    Errors of this package are not: they already say what to do."""
    if isinstance(exc, LangMemPluginError):
        return False
    return any(_from_provider(e) or isinstance(e, ConnectionError | TimeoutError) for e in _chain(exc))


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for e in _chain(exc) for cls in type(e).__mro__}


def _status(exc: BaseException) -> int | None:
    for e in _chain(exc):
        for holder in (e, getattr(e, "response", None)):
            code = getattr(holder, "status_code", None)
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    return None


def _what_happened(exc: BaseException, url: str | None) -> tuple[str, str]:
    """What the provider did, and the fix for it."""
    names, status = _names(exc), _status(exc)
    text = str(exc).lower()
    server = f"the server at {url}" if url else "the provider's server"
    if status in (401, 403) or "AuthenticationError" in names or "PermissionDeniedError" in names:
        return (
            f"it refused the API key (HTTP {status or 401})",
            "check the API key (OPENAI_API_KEY for OpenAI, ANTHROPIC_API_KEY for Anthropic, or the "
            "api_key= you passed): it is missing, mistyped, revoked, or for another server",
        )
    no_key = "api_key" in text.replace(" ", "_") and ("missing" in text or "must be set" in text)
    if status is None and no_key:
        return (
            "it has no API key",
            "set OPENAI_API_KEY (or the provider's key variable), or pass api_key=...; a local server "
            "that takes no key still needs one set: api_key='unused'",
        )
    if status == 404 or "NotFoundError" in names:
        return (
            "it has no such model or path (HTTP 404)",
            f"check the model name (Ollama: ollama pull <model>) and that {server} is the API's root "
            "(an OpenAI-compatible server's base_url ends in /v1)",
        )
    if status == 429 or "RateLimitError" in names:
        return "it refused the request: rate limit or quota (HTTP 429)", "wait and retry, or check the quota"
    unreachable = any(isinstance(e, ConnectionError | TimeoutError) for e in _chain(exc))
    if unreachable or _CONNECTION_FAILURES & names:
        return (
            "its server did not answer",
            f"check that {server} is running and reachable (Ollama: ollama serve; vLLM: vllm serve <model>)",
        )
    if status is not None:
        return f"it answered HTTP {status}", f"check {server} and the model name"
    return "it failed", f"check {server}, the model name and the API key"


#: The error of a provider that may answer if asked again, for each error a caller asks for.
_UNAVAILABLE: dict[type[ProviderError], type[ProviderError]] = {
    ProviderError: ProviderUnavailableError,
    ChatModelError: ChatModelUnavailableError,
    EmbeddingsError: EmbeddingsUnavailableError,
}


def _may_answer_again(exc: BaseException) -> bool:
    """Whether the provider may answer the same call later: no answer, a rate limit, an HTTP 5xx."""
    names, status = _names(exc), _status(exc)
    if status is not None:
        return status == 429 or status >= 500
    if "RateLimitError" in names or "InternalServerError" in names:
        return True
    return any(isinstance(e, ConnectionError | TimeoutError) for e in _chain(exc)) or bool(
        _CONNECTION_FAILURES & names
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else ""
    line = line if len(line) <= 200 else line[:197] + "..."
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def provider_error(
    provider: Any,
    reason: str,
    exc: BaseException,
    *,
    error: type[ProviderError] = ProviderError,
    fix: str = "",
    called: bool = True,
) -> ProviderError:
    """``exc``, a failure of ``provider``, as an ``error`` that says what, why and the fix.

    Args:
        provider: the chat model or embedder that was called (or a string naming what a failed
            constructor was asked to make).
        reason: why it was called, e.g. ``"to learn the dimension of its vectors"``.
        exc: the provider's exception (raise the result ``from exc``).
        error: the class to make: :class:`~langmem_plugin.errors.ProviderError` or a subclass.
        fix: a further fix, said after the provider's (e.g. how to avoid the call).
        called: ``False`` when making the object failed (no call was made): the message says
            it could not be made.

    >>> from langmem_plugin.errors import EmbeddingsError
    >>> refused = ConnectionRefusedError(111, "refused")
    >>> err = provider_error("OpenAIEmbeddings(model='m')", "to embed", refused, error=EmbeddingsError)
    >>> print(str(err).split(". Fix: ")[0])
    OpenAIEmbeddings(model='m') was called to embed, and its server did not answer
    (ConnectionRefusedError: [Errno 111] refused)
    """
    what = describe(provider)
    happened, provider_fix = _what_happened(exc, None if isinstance(provider, str) else base_url(provider))
    if called and _may_answer_again(exc):
        error = _UNAVAILABLE.get(error, error)
    fixes = "; or ".join(f for f in (provider_fix, fix) if f)
    said = f"was called {reason}, and {happened}" if called else f"could not be made{reason}: {happened}"
    message = f"{what} {said} ({_first_line(exc)}). Fix: {fixes}."
    return error(message, provider=what, reason=reason)
