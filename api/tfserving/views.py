"""The TF-Serving-compatible endpoints: predict, version status, metadata.

Errors are TF Serving's shape, `{"error": "<sentence>"}`, with a 4xx status (503 with
Retry-After when the service is busy or an answer is still being computed). Access is the
REST API's: anyone may ask, within the same rate-limit windows (a call counts once,
however many instances it carries) and, for work the cache cannot answer, admission
control.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import schema_docs as docs
from api.tfserving import body as tfbody
from api.tfserving.outputs import ENSEMBLE, ENSEMBLE_VERSION, NotServable, member, output
from api.tfserving.status import model_versions, signature
from api.throttles import client_key
from api.wait_slots import wait_slot
from plumbing import json_body
from predictions import awaiting, gate
from predictions.gate import Client, Question
from predictions.models import PredictionRequest

STILL_COMPUTING_RETRY_SECONDS = 2
FAILED_RETRY_SECONDS = 10
ROW_EXAMPLE = {"signature_name": "serving_default", "instances": [{"symbol": "AAPL", "horizon": 5}]}
COLUMNAR_EXAMPLE = {"inputs": {"symbol": ["AAPL", "^GSPC"], "horizon": [5, 20]}}


def tf_error(message: str, status: int, retry_after: int | None = None) -> Response:
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return Response({"error": message}, status=status, headers=headers)


class ServableNotFound(Exception):
    pass


def known_model(model: str, version: str | None) -> int | None:
    """The version asked for as a number (None: the newest); ServableNotFound otherwise."""
    models = [ENSEMBLE, *settings.PREDICTION_MODELS]
    if model not in models:
        raise ServableNotFound(
            f"Servable not found for request: Specs(name='{model}'): this service serves "
            f"{', '.join(models)}."
        )
    if version is None:
        return None
    if not (version.isascii() and version.isdigit()):
        raise ServableNotFound(f"Version {version!r} of {model}: versions are whole numbers.")
    if model == ENSEMBLE and int(version) != ENSEMBLE_VERSION:
        raise ServableNotFound(
            f"The ensemble has one version, {ENSEMBLE_VERSION}: it is combined anew from "
            "each member's newest version on every answer."
        )
    return int(version)


class TFServingView(APIView):
    """DRF's authentication and throttles; errors in TF Serving's shape."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if isinstance(response.data, dict) and "error" in response.data:
            response.data = {"error": response.data["error"]}
        return response


@extend_schema(tags=["tfserving"])
class Predict(TFServingView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={
            200: OpenApiTypes.OBJECT,
            400: docs.BAD_REQUEST,
            404: docs.NOT_FOUND,
            415: docs.UNSUPPORTED,
            429: docs.THROTTLED,
            503: docs.UNAVAILABLE,
        },
        examples=[
            OpenApiExample("row format", value=ROW_EXAMPLE, request_only=True),
            OpenApiExample("columnar format", value=COLUMNAR_EXAMPLE, request_only=True),
        ],
        description="TF Serving's Predict: one forecast per instance, in order. Cached "
        "answers at once; others through the pipeline, waiting up to TFSERVING_MAX_WAIT s "
        "(503 with Retry-After and the request ids when not finished by then).",
    )
    def post(self, request: Request, model: str, version: str | None = None) -> Response:
        try:
            wanted = known_model(model, version)
        except ServableNotFound as exc:
            return tf_error(str(exc), 404)
        if request.content_type != "application/json" and request.META.get("HTTP_ORIGIN"):
            # A page's form can post text/plain or form-encoded bodies to another site
            # without a preflight, and would start pipelines in its visitor's name. Browsers
            # send Origin with it; `curl -d` (form-encoded, TF Serving's examples) does not.
            return tf_error(
                f"A browser may call predict only with a JSON body declared as "
                f"Content-Type: application/json (got {request.content_type or 'none'}).",
                415,
            )
        try:
            call = tfbody.parse(json_body.loads(request.body or b"null"))
        except (json_body.UnreadableBody, tfbody.BadBody) as exc:
            return tf_error(str(exc), 400)
        questions = list(dict.fromkeys(call.instances))
        found: dict[tfbody.Instance, tuple[PredictionRequest, bool]] = {}
        asked: dict[tfbody.Instance, PredictionRequest] = {}
        strategy = settings.DEFAULT_STRATEGY
        if model != ENSEMBLE and strategy == "cascade":
            strategy = "chord"  # the cascade may skip the member asked for
        client = Client(client_key(request), request.user)

        def has_member(prediction: PredictionRequest) -> bool:
            return model == ENSEMBLE or member(prediction, model) is not None

        for question in questions:
            index = call.instances.index(question)
            asking = Question(question.symbol, question.horizon, strategy)
            outcome = gate.ask(asking, client, has_member)
            if isinstance(outcome, gate.Answered):
                found[question] = (outcome.prediction, True)
            elif isinstance(outcome, gate.Unservable):
                return tf_error(f"Instance {index}: {outcome.reason}", 400)
            elif isinstance(outcome, gate.Refused):
                started = ", ".join(str(r.id) for r in asked.values()) or "none"
                return tf_error(
                    f"Instance {index}: {outcome.reason} Requests already started for this "
                    f"call: {started}.",
                    503 if outcome.busy else 429,
                    outcome.retry_after,
                )
            else:
                asked[question] = outcome.request
        if asked:
            refused = self._wait(asked, found, client.key)
            if refused is not None:
                return refused
        try:
            outputs = [
                output(found[i][0], model, wanted, cache_hit=found[i][1]) for i in call.instances
            ]
        except NotServable as exc:
            return tf_error(str(exc), exc.status)
        if call.layout == tfbody.ROW:
            return Response({"predictions": outputs})
        return Response({"outputs": {key: [o[key] for o in outputs] for key in outputs[0]}})

    def _wait(
        self,
        asked: dict[tfbody.Instance, PredictionRequest],
        found: dict[tfbody.Instance, tuple[PredictionRequest, bool]],
        client: str,
    ) -> Response | None:
        """Wait for the pipelines this call started or joined; an error response if any is
        not done in time or failed."""
        with wait_slot(client) as free:
            seconds = settings.TFSERVING_MAX_WAIT if free else 0.0
            asked = dict(zip(asked, awaiting.wait_for(asked.values(), seconds), strict=True))
        unfinished, failed = [], []
        for question, request in asked.items():
            answer = awaiting.answer_of(request)
            label = f"{question.symbol} h={question.horizon} (request {request.id})"
            if not request.is_final:
                unfinished.append(label)
            elif answer.status != "done":
                failed.append(f"{label}: {answer.error}")
            else:
                found[question] = (answer, False)
        if unfinished:
            return tf_error(
                f"Still being computed: {'; '.join(unfinished)}. Repeat the call in a moment: "
                "it joins these instead of starting again.",
                503,
                STILL_COMPUTING_RETRY_SECONDS,
            )
        if failed:
            return tf_error(
                f"The prediction failed for {'; '.join(failed)}", 503, FAILED_RETRY_SECONDS
            )
        return None


@extend_schema(tags=["tfserving"])
class Status(TFServingView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, 404: docs.NOT_FOUND},
        description="TF Serving's model_version_status: AVAILABLE, LOADING (workers warming "
        "up), END (an older generation the registry keeps), UNKNOWN (no worker running).",
    )
    def get(self, request: Request, model: str, version: str | None = None) -> Response:
        try:
            wanted = known_model(model, version)
        except ServableNotFound as exc:
            return tf_error(str(exc), 404)
        versions = model_versions(model)
        if wanted is not None:
            versions = [v for v in versions if int(v["version"]) == wanted]
        if not versions:
            which = (
                f"version {wanted} of {model}" if wanted is not None else f"any version of {model}"
            )
            return tf_error(
                f"Could not find {which}: a member's versions are the registry generations "
                "trained so far (the first prediction that needs one trains it).",
                404,
            )
        return Response({"model_version_status": versions})


@extend_schema(tags=["tfserving"])
class Metadata(TFServingView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: docs.NOT_FOUND})
    def get(self, request: Request, model: str) -> Response:
        try:
            known_model(model, None)
        except ServableNotFound as exc:
            return tf_error(str(exc), 404)
        versions = model_versions(model)
        newest = max((int(v["version"]) for v in versions), default=None)
        return Response(
            {
                "model_spec": {"name": model, "signature_name": "", "version": str(newest or "")},
                "metadata": signature(model),
            }
        )
