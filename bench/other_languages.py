#!/usr/bin/env python3
"""Questions in languages the model does not read, or reads loosely (docs/search.md, "A query the model cannot read"
and "Function words of other languages").

1. What the embedding model makes of other languages: the cosine of two unrelated sentences (six of each, the
   same six topics in every language), by `ghola embed`.
2. A history written for this bench, ten messages each in Chinese, Japanese and Russian, each on its own topic,
   and two kinds of question asked of it globally: one per message in its own language that the message answers
   (it shares a word of substance with the question, as a person asking about their own work would use one), and
   five per language that nothing answers (they share no word of substance with any message: for Chinese and
   Japanese no pair of characters, for Russian no word but function words).
2b. A second written history, ten messages each in Spanish, French and German on the same topics, asked the same
   way (a question nothing answers shares no word with any message but function words: de, la, die …).
2c. The same topics written in English, a history asked with the Spanish, French and German questions (a
   question in one language about work recorded in another).
3. The same for the one real Japanese session of ../shared/corpus (`d-kimuson-claude-code-viewer`): questions it
   answers, and questions it does not.

A question is answered when its message is the first hit; a question nothing answers should find nothing; the hits
shown to a question that has one answer are the rest of its list, the fewer the better.

    python3 bench/other_languages.py [--ghola target/release/ghola] [--work /tmp/other-languages] [-- search args]

The questions were written by us, beside the texts, before any ranking was run; there are no others in these
languages to tune on, and nothing was tuned on these.
"""
import argparse, json, math, re, shutil, subprocess
from pathlib import Path

root = Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--work", default="/tmp/other-languages")
ap.add_argument("extra", nargs="*", help="arguments for every search (after --)")
a = ap.parse_args()

# 1. Six topics, each said in every language.
SENTENCES = {
    "zh": ["数据库迁移失败的原因是什么", "我们把登录页面的样式改成了深色主题", "测试在持续集成里超时了，因为端口被占用",
           "请帮我把这个函数重构成异步的", "昨天部署到生产环境以后内存一直在涨", "用户头像上传后没有显示出来"],
    "ja": ["データベースの移行が失敗した原因は何ですか", "ログイン画面のスタイルをダークテーマに変更しました",
           "ポートが使われていたのでCIでテストがタイムアウトしました", "この関数を非同期にリファクタリングしてください",
           "本番環境にデプロイしてからメモリが増え続けています", "ユーザーのアバターがアップロード後に表示されません"],
    "ko": ["데이터베이스 마이그레이션이 실패한 이유는 무엇인가요", "로그인 페이지 스타일을 다크 테마로 바꿨습니다",
           "포트가 사용 중이어서 CI에서 테스트가 시간 초과되었습니다", "이 함수를 비동기로 리팩터링해 주세요",
           "어제 프로덕션에 배포한 이후로 메모리가 계속 늘어나고 있습니다", "업로드 후에 사용자 아바타가 표시되지 않습니다"],
    "ru": ["почему миграция базы данных не удалась", "мы изменили стиль страницы входа на тёмную тему",
           "тесты в CI упали по таймауту, потому что порт был занят", "пожалуйста, перепиши эту функцию асинхронно",
           "память растёт с момента вчерашнего деплоя в продакшен", "аватар пользователя не отображается после загрузки"],
    "ar": ["لماذا فشل ترحيل قاعدة البيانات", "غيرنا نمط صفحة تسجيل الدخول إلى سمة داكنة",
           "انتهت مهلة الاختبارات في التكامل المستمر لأن المنفذ كان مشغولا", "من فضلك أعد كتابة هذه الدالة لتكون غير متزامنة",
           "الذاكرة تستمر في الزيادة منذ النشر إلى الإنتاج أمس", "لا تظهر الصورة الرمزية للمستخدم بعد الرفع"],
    "hi": ["डेटाबेस माइग्रेशन क्यों विफल हुआ", "हमने लॉगिन पेज की शैली को डार्क थीम में बदल दिया",
           "सीआई में टेस्ट टाइमआउट हो गए क्योंकि पोर्ट व्यस्त था", "कृपया इस फ़ंक्शन को एसिंक्रोनस बनाएं",
           "कल प्रोडक्शन में डिप्लॉय के बाद से मेमोरी बढ़ती जा रही है", "अपलोड के बाद उपयोगकर्ता का अवतार नहीं दिखता"],
    "de": ["warum ist die Datenbankmigration fehlgeschlagen", "wir haben das Design der Anmeldeseite auf ein dunkles Thema umgestellt",
           "die Tests sind in der CI abgelaufen, weil der Port belegt war", "bitte schreibe diese Funktion asynchron um",
           "der Speicher wächst seit dem gestrigen Deployment in die Produktion", "der Avatar des Benutzers wird nach dem Hochladen nicht angezeigt"],
    "fr": ["pourquoi la migration de la base de données a échoué", "nous avons changé le style de la page de connexion pour un thème sombre",
           "les tests en CI ont expiré parce que le port était occupé", "merci de réécrire cette fonction en asynchrone",
           "la mémoire augmente depuis le déploiement en production d'hier", "l'avatar de l'utilisateur ne s'affiche pas après le téléversement"],
    "es": ["por qué falló la migración de la base de datos", "cambiamos el estilo de la página de inicio de sesión a un tema oscuro",
           "las pruebas en CI agotaron el tiempo porque el puerto estaba ocupado", "por favor refactoriza esta función para que sea asíncrona",
           "la memoria sigue creciendo desde el despliegue a producción de ayer", "el avatar del usuario no se muestra después de subirlo"],
    "en": ["why did the database migration fail", "we changed the login page style to a dark theme",
           "the tests timed out in CI because the port was taken", "please refactor this function to be async",
           "memory keeps growing since the deploy to production yesterday", "the user's avatar does not show after upload"],
}

# 2. The written history: (message, question it answers); then questions nothing in it answers.
ZH = [
    ("数据库迁移失败了，原因是外键约束和旧表冲突，我先删掉了旧的索引再重新执行。", "数据库迁移为什么失败？"),
    ("登录页面已经改成深色主题，按钮颜色也跟着调整了。", "登录页面的主题改成什么了？"),
    ("持续集成里的测试超时是因为端口 8080 被另一个进程占用。", "测试超时的原因是什么"),
    ("用户头像上传以后不显示，原因是图片路径少了一个斜杠。", "头像上传后为什么看不到"),
    ("我把日志级别从 debug 改成了 info，生产环境的磁盘占用下降了很多。", "日志级别改了吗"),
    ("缓存的过期时间设置为五分钟，命中率大约百分之八十。", "缓存过期时间是多少"),
    ("接口返回 500 错误，是因为配置文件里缺少数据库密码。", "接口报500错误是怎么回事"),
    ("前端打包体积太大，我们用了代码分割和懒加载。", "怎么减小打包体积"),
    ("定时任务每天凌晨三点运行，负责清理过期的会话。", "定时任务什么时候运行"),
    ("权限检查放在中间件里，未登录的请求会被重定向到登录页。", "权限检查在哪里做的"),
]
ZH_NOISE = ["邮件是怎么发送的？", "我们用的是哪个支付服务商？", "搜索功能的分词器是怎么选的",
            "移动端的推送证书什么时候到期", "为什么要把单体拆成微服务"]
JA = [
    ("本番環境にデプロイしてからメモリが増え続けているので、キャッシュの上限を設定しました。", "メモリが増えた原因は？"),
    ("ログイン画面のスタイルをダークテーマに変更しました。", "ログイン画面のテーマは何に変えた？"),
    ("この関数を非同期にリファクタリングして、テストも更新しました。", "非同期へのリファクタリングはどうなった"),
    ("ビルドが失敗したのは依存パッケージのバージョンが古かったからです。", "ビルドが失敗した理由"),
    ("環境変数の読み込み順を修正して、設定ファイルより優先するようにしました。", "環境変数の優先順位はどうなっている？"),
    ("検索結果のページネーションを追加し、一ページ二十件にしました。", "ページネーションは一ページ何件？"),
    ("画像のアップロードサイズ上限を五メガバイトに制限しました。", "アップロードできる画像の大きさは？"),
    ("型エラーが出ていたので、インターフェースの定義を見直しました。", "型エラーはどう直した？"),
    ("通知メールの送信をキューに入れて、非同期で処理するようにしました。", "通知メールはどうやって送っている？"),
    ("ユーザー削除時に関連データも消えるようにカスケード削除を設定しました。", "ユーザーを削除したら関連データはどうなる？"),
]
RU = [
    ("Миграция базы данных упала из-за конфликта внешних ключей.", "из-за чего упала миграция?"),
    ("Страницу входа перевели на тёмную тему.", "какую тему сделали для страницы входа?"),
    ("Тесты в CI падали по таймауту, потому что порт 8080 был занят.", "почему тесты падали по таймауту"),
    ("Аватар пользователя не отображался: в пути к картинке не хватало слеша.", "почему не отображался аватар"),
    ("Уровень логов поменяли с debug на info, и диск перестал заполняться.", "какой уровень логов сейчас"),
    ("Время жизни кэша поставили пять минут.", "какое время жизни у кэша"),
    ("Эндпоинт возвращал 500, потому что в конфиге не было пароля от базы.", "почему эндпоинт возвращал 500"),
    ("Бандл фронтенда уменьшили с помощью разделения кода и ленивой загрузки.", "как уменьшили бандл"),
    ("Крон-задача запускается каждый день в три часа ночи и чистит старые сессии.", "когда запускается крон-задача"),
    ("Проверку прав вынесли в middleware, неавторизованные запросы уходят на логин.", "где делается проверка прав"),
]
RU_NOISE = ["как настроены почтовые уведомления?", "какой платёжный провайдер мы используем", "почему не работает поиск по тегам",
            "когда истекает сертификат для пушей", "зачем разбили монолит на микросервисы"]
JA_NOISE = ["リトライについて何を決めましたか", "決済サービスはどこを使っていますか", "スマホ向けの証明書の期限は？",
            "形態素解析器はどれにした？", "マイクロサービスに移った理由"]

ES = [
    ("La migración de la base de datos falló por un conflicto de claves foráneas con la tabla antigua.", "¿por qué falló la migración?"),
    ("Cambiamos la página de inicio de sesión a un tema oscuro.", "¿qué tema tiene ahora la página de inicio de sesión?"),
    ("Las pruebas en CI agotaban el tiempo porque el puerto 8080 estaba ocupado.", "¿por qué agotaban el tiempo las pruebas?"),
    ("El avatar del usuario no se mostraba: a la ruta de la imagen le faltaba una barra.", "¿por qué no se mostraba el avatar?"),
    ("Cambiamos el nivel de los registros de debug a info y el disco dejó de llenarse.", "¿qué nivel de registros usamos?"),
    ("La caché expira a los cinco minutos.", "¿cuándo expira la caché?"),
    ("El endpoint devolvía 500 porque faltaba la contraseña de la base en la configuración.", "¿por qué el endpoint devolvía 500?"),
    ("Redujimos el paquete del frontend con división de código y carga diferida.", "¿cómo redujimos el paquete del frontend?"),
    ("La tarea programada se ejecuta cada día a las tres de la mañana y borra las sesiones viejas.", "¿cuándo se ejecuta la tarea programada?"),
    ("La comprobación de permisos está en el middleware; las peticiones sin sesión van al login.", "¿dónde está la comprobación de permisos?"),
]
ES_NOISE = ["¿cómo se envían los correos de notificación?", "¿qué proveedor de pagos usamos?",
            "¿por qué no funciona la búsqueda por etiquetas?", "¿cuándo caduca el certificado para las notificaciones push?",
            "¿para qué dividimos el monolito en microservicios?"]
FR = [
    ("La migration de la base de données a échoué à cause d'un conflit de clés étrangères.", "pourquoi la migration a échoué ?"),
    ("La page de connexion est passée à un thème sombre.", "quel thème pour la page de connexion ?"),
    ("Les tests en CI expiraient parce que le port 8080 était occupé.", "pourquoi les tests expiraient en CI ?"),
    ("L'avatar de l'utilisateur ne s'affichait pas : il manquait une barre oblique dans le chemin de l'image.", "pourquoi l'avatar ne s'affichait pas ?"),
    ("Le niveau des journaux est passé de debug à info, et le disque ne se remplit plus.", "quel niveau de journaux utilisons-nous ?"),
    ("Le cache expire au bout de cinq minutes.", "au bout de combien de temps le cache expire ?"),
    ("L'endpoint renvoyait 500 parce que le mot de passe de la base manquait dans la configuration.", "pourquoi l'endpoint renvoyait 500 ?"),
    ("Nous avons réduit le bundle du frontend avec le découpage du code et le chargement différé.", "comment avons-nous réduit le bundle ?"),
    ("La tâche planifiée tourne chaque jour à trois heures du matin et supprime les vieilles sessions.", "quand tourne la tâche planifiée ?"),
    ("La vérification des droits est dans le middleware ; les requêtes non connectées vont vers le login.", "où se fait la vérification des droits ?"),
]
FR_NOISE = ["comment sont envoyés les courriels de notification ?", "quel prestataire de paiement utilisons-nous ?",
            "pourquoi la recherche par étiquettes ne marche pas ?", "quand le certificat des notifications push arrive-t-il à échéance ?",
            "pourquoi avoir séparé le monolithe en microservices ?"]
DE = [
    ("Die Datenbankmigration ist wegen eines Konflikts mit Fremdschlüsseln fehlgeschlagen.", "warum ist die Datenbankmigration fehlgeschlagen?"),
    ("Die Anmeldeseite hat jetzt ein dunkles Thema.", "welches Thema hat die Anmeldeseite?"),
    ("Die Tests in der CI liefen in ein Timeout, weil Port 8080 belegt war.", "warum liefen die Tests in ein Timeout?"),
    ("Der Avatar des Benutzers wurde nicht angezeigt, weil im Bildpfad ein Schrägstrich fehlte.", "warum wurde der Avatar nicht angezeigt?"),
    ("Die Protokollstufe wurde von debug auf info gesenkt, und die Platte läuft nicht mehr voll.", "welche Protokollstufe nutzen wir?"),
    ("Der Cache läuft nach fünf Minuten ab.", "wann läuft der Cache ab?"),
    ("Der Endpunkt lieferte 500, weil das Datenbankpasswort in der Konfiguration fehlte.", "warum lieferte der Endpunkt 500?"),
    ("Wir haben das Frontend-Bundle mit Code-Splitting und Lazy Loading verkleinert.", "wie haben wir das Bundle verkleinert?"),
    ("Der geplante Job läuft jeden Tag um drei Uhr nachts und löscht alte Sitzungen.", "wann läuft der geplante Job?"),
    ("Die Rechteprüfung steckt in der Middleware; nicht angemeldete Anfragen gehen zum Login.", "wo passiert die Rechteprüfung?"),
]
DE_NOISE = ["wie werden die Benachrichtigungsmails verschickt?", "welchen Zahlungsanbieter verwenden wir?",
            "warum funktioniert die Suche nach Schlagwörtern nicht?", "wann verfällt das Zertifikat für Push-Nachrichten?",
            "wozu haben wir den Monolithen in Microservices aufgeteilt?"]

# 2c. The same ten topics said in English: a history asked in Spanish, French and German (its i-th message answers
# each language's i-th question above).
EN = [
    "The database migration failed because of a foreign key conflict with the old table.",
    "We switched the sign-in page to a dark theme.",
    "The CI tests timed out because port 8080 was taken.",
    "The user's avatar did not show: the image path was missing a slash.",
    "We lowered the log level from debug to info and the disk stopped filling up.",
    "The cache expires after five minutes.",
    "The endpoint returned 500 because the database password was missing from the config.",
    "We shrank the frontend bundle with code splitting and lazy loading.",
    "The scheduled job runs every day at three in the morning and deletes old sessions.",
    "The permission check lives in the middleware; requests without a session go to the login page.",
]

# 3. The real session: questions it answers (its update of CLAUDE.md), each with what the first hit should hold,
# and questions it does not answer.
REAL = [("技術スタックの更新内容は？", "技術スタック"), ("デフォルトのポートは何番？", "ポート3000"),
        ("開発コマンドで削除したものは？", "type-check"), ("Tailwind CSSのバージョンは？", "Tailwind CSS v4"),
        ("CLAUDE.mdを最新の状態にして", "最新の状態にアップデート")]
REAL_NOISE = ["リトライについて何を決めましたか", "ログイン画面のバグを直した方法", "決済サービスはどこを使っていますか",
              "テストが遅い原因は何？", "認証トークンの有効期限をどう設定した？"]

CJK = re.compile(r"[\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                 r"\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")


def substance(text):
    """The pairs of characters of `text` that are not grammar (as `index::terms::is_grammar` reads them)."""
    pairs = {run[k:k + 2] for run in CJK.findall(text) for k in range(len(run) - 1)}
    return {p for p in pairs if not re.search(r"[\u3041-\u309f]", p) and not set(p) & set("的了吗呢吧啊么麼嗎们們这這那我你妳他她它是什怎")}


# A question nothing answers shares no pair of substance with any message of the written history, nor (Russian)
# a word longer than two letters other than a question word.
for noise in ZH_NOISE + JA_NOISE:
    shared = substance(noise) & set().union(*(substance(t) for t, _ in ZH + JA))
    assert not shared, f"{noise} shares {shared}"
RU_WORD = re.compile(r"[а-яё-]{3,}")
for noise in RU_NOISE:
    shared = set(RU_WORD.findall(noise.lower())) & set().union(*(RU_WORD.findall(t.lower()) for t, _ in RU))
    assert shared <= {"почему", "как", "какой", "когда", "зачем"}, f"{noise} shares {shared}"
# In Spanish, French and German, no word but these function words (nor with a message of the other two languages).
LATIN_WORD = re.compile(r"\w+")
LATIN_FUNCTION = {"de", "los", "se", "la", "no", "por", "el", "las", "en", "les", "nous", "ne", "pas", "des", "il", "le",
                  "à", "die", "wir", "nach", "nicht", "das", "haben", "in"}
for noise in ES_NOISE + FR_NOISE + DE_NOISE:
    shared = set(LATIN_WORD.findall(noise.lower())) & set().union(
        *(LATIN_WORD.findall(t.lower()) for t, _ in ES + FR + DE))
    assert shared <= LATIN_FUNCTION, f"{noise} shares {shared}"
    shared = set(LATIN_WORD.findall(noise.lower())) & set().union(*(LATIN_WORD.findall(t.lower()) for t in EN))
    assert shared <= {"in"}, f"{noise} shares {shared} with the English history"


def embed(texts):
    out = subprocess.run([a.ghola, "embed", "--model-dir", a.model_dir], capture_output=True, text=True, check=True,
                         input="".join(json.dumps({"text": t}) + "\n" for t in texts)).stdout
    return [json.loads(l) for l in out.splitlines()]


def cos(u, v):
    return sum(x * y for x, y in zip(u, v)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))


print("1. cosine of two unrelated sentences (min / median / max of 30 pairs)")
for lang, texts in SENTENCES.items():
    vs = embed(texts)
    xs = sorted(cos(vs[i], vs[j]) for i in range(6) for j in range(6) if i != j)
    print(f"   {lang}: {xs[0]:.2f} / {(xs[14] + xs[15]) / 2:.2f} / {xs[-1]:.2f}")


def search(claude, index, q):
    r = subprocess.run([a.ghola, "--claude-dir", str(claude), "--index-dir", str(index), "--model-dir", a.model_dir,
                        "search", q, "--global", "--context", "0", "--limit", "10", "--json", "--no-update"]
                       + a.extra, capture_output=True, text=True, check=True)
    return [h["matched_message"]["content"] for h in json.loads(r.stdout)["results"]]


work = Path(a.work)
shutil.rmtree(work, ignore_errors=True)
HISTORIES = [("2. a written history in Chinese, Japanese and Russian (30 messages)", "cjk-ru",
              [("zh", ZH, ZH_NOISE), ("ja", JA, JA_NOISE), ("ru", RU, RU_NOISE)]),
             ("2b. a written history in Spanish, French and German (30 messages)", "latin",
              [("es", ES, ES_NOISE), ("fr", FR, FR_NOISE), ("de", DE, DE_NOISE)])]
for title, name, languages in HISTORIES:
    claude = work / name / "claude"
    for lang, pairs, _ in languages:
        d = claude / "projects" / f"-w-{lang}"
        d.mkdir(parents=True)
        lines = []
        for i, (text, _) in enumerate(pairs):
            lines.append({"type": "user", "uuid": f"{lang}-{i}", "sessionId": lang, "cwd": f"/w/{lang}",
                          "timestamp": f"2025-05-02T09:{i:02}:00Z",
                          "message": {"role": "user", "content": text}})
        (d / f"{lang}.jsonl").write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines))
    index = work / name / "index"
    subprocess.run([a.ghola, "--claude-dir", str(claude), "--index-dir", str(index), "--model-dir", a.model_dir,
                    "index"], capture_output=True, check=True)
    print(title)
    for lang, pairs, noise in languages:
        first = top10 = shown = 0
        for text, q in pairs:
            hits = search(claude, index, q)
            first += bool(hits) and hits[0] == text
            top10 += text in hits
            shown += len(hits)
        quiet = sum(not search(claude, index, q) for q in noise)
        print(f"   {lang}: answered first {first}/{len(pairs)}, in the top ten {top10}/{len(pairs)}, "
              f"{shown / len(pairs):.1f} hits shown a question (of ten at most); "
              f"questions nothing answers that find nothing {quiet}/{len(noise)}")

claude = work / "english" / "claude"
d = claude / "projects" / "-w-en"
d.mkdir(parents=True)
d.joinpath("en.jsonl").write_text("".join(json.dumps(
    {"type": "user", "uuid": f"en-{i}", "sessionId": "en", "cwd": "/w/en", "timestamp": f"2025-05-02T09:{i:02}:00Z",
     "message": {"role": "user", "content": text}}) + "\n" for i, text in enumerate(EN)))
index = work / "english" / "index"
subprocess.run([a.ghola, "--claude-dir", str(claude), "--index-dir", str(index), "--model-dir", a.model_dir, "index"],
               capture_output=True, check=True)
print("2c. the same topics written in English (10 messages), asked in Spanish, French and German")
for lang, pairs, noise in [("es", ES, ES_NOISE), ("fr", FR, FR_NOISE), ("de", DE, DE_NOISE)]:
    first = top10 = shown = 0
    for text, (_, q) in zip(EN, pairs):
        hits = search(claude, index, q)
        first += bool(hits) and hits[0] == text
        top10 += text in hits
        shown += len(hits)
    quiet = sum(not search(claude, index, q) for q in noise)
    print(f"   {lang}: answered first {first}/{len(pairs)}, in the top ten {top10}/{len(pairs)}, "
          f"{shown / len(pairs):.1f} hits shown a question; questions nothing answers that find nothing "
          f"{quiet}/{len(noise)}")

real = root.parent / "shared/corpus/d-kimuson-claude-code-viewer"
if real.is_dir():
    subprocess.run([a.ghola, "--claude-dir", str(real), "--index-dir", str(work / "real-index"), "--model-dir",
                    a.model_dir, "index"], capture_output=True, check=True)
    tops = [(search(real, work / "real-index", q)[:1], want) for q, want in REAL]
    first = sum(bool(h) and want in h[0] for h, want in tops)
    quiet = sum(not search(real, work / "real-index", q) for q in REAL_NOISE)
    print(f"3. d-kimuson-claude-code-viewer: the first hit holds the answer for {first}/{len(REAL)}; "
          f"questions it does not answer that find nothing {quiet}/{len(REAL_NOISE)}")
