"""The seed's typed OpenEnv client for the browser environment."""

from typing import Any, Dict

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from browser_models import BrowserAction, BrowserObservation, BrowserState


class BrowserClient(EnvClient[BrowserAction, BrowserObservation, BrowserState]):
    """Typed client: BrowserAction in, StepResult[BrowserObservation] out."""

    def _step_payload(self, action: BrowserAction) -> Dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: Dict[str, Any]) -> StepResult[BrowserObservation]:
        obs_payload = payload.get("observation", {})
        observation = BrowserObservation(
            **obs_payload,
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: Dict[str, Any]) -> BrowserState:
        return BrowserState.model_validate(payload)
