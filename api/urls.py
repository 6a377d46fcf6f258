from django.urls import path

from api import generation_views, market_views, registry_views, views

urlpatterns = [
    path("predictions/", views.PredictionListCreate.as_view(), name="prediction-list"),
    path("predictions/<str:id>/", views.PredictionDetail.as_view(), name="prediction-detail"),
    path("symbols/", views.SymbolList.as_view(), name="symbol-list"),
    path(
        "symbols/<str:symbol>/track-record/",
        market_views.TrackRecord.as_view(),
        name="track-record",
    ),
    path("clock/", market_views.Clock.as_view(), name="market-clock"),
    path("model-health/", market_views.ModelHealthList.as_view(), name="model-health"),
    path("generations/", generation_views.GenerationList.as_view(), name="generation-list"),
    path(
        "generations/<str:symbol>/<str:model>/",
        generation_views.GenerationChange.as_view(),
        name="generation-change",
    ),
    path("models/", registry_views.ModelList.as_view(), name="model-list"),
    path("models/<str:symbol>/", registry_views.ModelDetail.as_view(), name="model-detail"),
]
