from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from webui import sign_in

urlpatterns = [
    path("", include("webui.urls")),
    path("", include("provisioning.urls")),
    path("api/v1/", include("api.urls")),
    path("", include("api.tfserving.urls")),  # TF Serving's REST API: /v1/models/...
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("admin/login/", sign_in.throttled(admin.site.login), name="admin-login"),
    path("admin/", admin.site.urls),
]

handler404 = "api.errors.json_not_found"
handler500 = "api.errors.json_server_error"
