"""Azure OpenAI: the OpenAI provider through the openai SDK's Azure client.

``AZURE_OPENAI_ENDPOINT`` (``https://NAME.openai.azure.com``) and ``AZURE_OPENAI_API_KEY`` select
it; the model is the deployment's name (``KILN_MODEL``, ``--model`` or
``AZURE_OPENAI_DEPLOYMENT``), which the SDK puts in the path
(``/openai/deployments/NAME/chat/completions``); ``OPENAI_API_VERSION`` picks the API version.
The key goes in the ``api-key`` header, as Azure expects. Requests, streaming, tool calls, usage
and errors are the OpenAI provider's own.
"""

from __future__ import annotations

import os
import re
from typing import Any

from agent.errors import ConfigError
from agent.providers.openai import OpenAIModel

# The newest generally available data-plane version that streams usage (stream_options).
DEFAULT_API_VERSION = "2024-10-21"
DEPLOYMENT_VAR = "AZURE_OPENAI_DEPLOYMENT"
_API_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")  # 2024-10-21, 2025-01-01-preview


def api_version() -> str:
    """``OPENAI_API_VERSION``, else the default; a value no version is spelled as (a space,
    ``²``, a query of its own) is refused before a request: Azure's 404 named no setting."""
    value = os.environ.get("OPENAI_API_VERSION", "").strip()
    if value and not (value.isascii() and _API_VERSION.fullmatch(value)):
        raise ConfigError(
            f"OPENAI_API_VERSION {value[:40]!r} is not an API version",
            hint=f"e.g. {DEFAULT_API_VERSION}, or unset it for that default",
        )
    return value or DEFAULT_API_VERSION


class AzureOpenAIModel(OpenAIModel):
    name = "azure"
    sdk_module = "openai"
    key_var = "AZURE_OPENAI_API_KEY"
    base_var = "AZURE_OPENAI_ENDPOINT"

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> AzureOpenAIModel:
        """The OpenAI provider's settings, each required here: Azure has no default endpoint or
        deployment, and no keyless servers."""
        endpoint = config.get("base_url") or os.environ.get(cls.base_var)
        if not endpoint:
            raise ConfigError(
                f"azure: {cls.base_var} is not set",
                hint=f"export {cls.base_var}=https://NAME.openai.azure.com",
            )
        if not (config.get("api_key") or os.environ.get(cls.key_var)):
            raise ConfigError(f"azure: {cls.key_var} is not set", hint=f"export {cls.key_var}=...")
        api_version()  # refused here, in one line, rather than at the first request
        deployment = (
            config.get("model") or os.environ.get("KILN_MODEL") or os.environ.get(DEPLOYMENT_VAR)
        )
        if not deployment:
            raise ConfigError(
                "azure: no deployment named",
                hint=f"set KILN_MODEL (or {DEPLOYMENT_VAR}) to the deployment's name",
            )
        return cls(
            model=deployment,
            api_key=config.get("api_key"),
            base_url=endpoint,
            context_window=config.get("context_window"),
        )

    def _new_client(self) -> Any:
        from kiln_errors.settled_imports import settled_imports

        with settled_imports("openai"):
            import openai

            client = openai.AsyncAzureOpenAI(
                api_key=self._api_key,
                azure_endpoint=str(self.base_url),
                api_version=api_version(),
                max_retries=0,
                timeout=self.timeout,
            )
            _ = client.chat.completions  # ~500 modules imported on first use: here
        return client
