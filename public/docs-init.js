// Renders /api/v1/openapi.json with Swagger UI (served from this server, see src/api-docs).
window.SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#swagger', deepLinking: true, tryItOutEnabled: false });
