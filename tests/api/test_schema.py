from __future__ import annotations

import pytest


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
