from __future__ import annotations

import pytest

pytestmark = pytest.mark.postgres


@pytest.mark.django_db
def test_it_serves_the_openapi_schema_with_the_prediction_paths(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert "/api/v1/predictions/" in schema["paths"]
    assert "/api/v1/predictions/{id}/" in schema["paths"]


@pytest.mark.django_db
def test_it_serves_swagger_ui_from_local_static_files(client):
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "method", "statuses"),
    [
        ("/api/v1/predictions/", "post", {"400", "404", "413", "415", "429", "503"}),
        ("/api/v1/predictions/", "get", {"401", "403", "404"}),  # 404: a page past the end
        ("/api/v1/predictions/{id}/", "get", {"400", "404", "503"}),
        ("/api/v1/models/{symbol}/", "get", {"404"}),
        ("/v1/models/{model}:predict", "post", {"400", "404", "415", "429", "503"}),
        ("/v1/models/{model}", "get", {"404"}),
        ("/v1/models/{model}/metadata", "get", {"404"}),
        ("/api/v1/symbols/{symbol}/track-record/", "get", {"400"}),
        ("/api/v1/clock/", "post", {"400", "403"}),
    ],
)
def test_the_schema_documents_the_statuses_the_api_answers(client, path, method, statuses):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    documented = set(schema["paths"][path][method]["responses"])
    assert statuses <= documented, statuses - documented


@pytest.mark.django_db
def test_the_documented_404s_happen(client, api_client, django_user_model):
    api_client.force_authenticate(django_user_model.objects.create_user("reader"))
    assert (
        client.get("/api/v1/predictions/00000000-0000-0000-0000-000000000000/").status_code == 404
    )
    assert api_client.get("/api/v1/predictions/?page=99").status_code == 404
    assert client.get("/api/v1/models/ZZZZ/").status_code == 404
    assert client.get("/v1/models/nosuch").status_code == 404
    assert client.get("/v1/models/nosuch/metadata").status_code == 404
