from django.urls import path
from shop import views

urlpatterns = [
    path("orders/", views.create_order),
    path("orders/later/", views.create_order_later),
    path("tasks/orders/", views.create_order_with_tasks),
    path("tasks/<str:name>/<str:result_id>/", views.task_result),
]
